import NIOCore
import Pushkins
import StatusAdapter
import Synchronization

/// The Status routes: the native API (status.md §6.2) and the gorush drop-in (§6.1).
final class StatusRoutes: Sendable {
    private let service = Mutex<StatusService?>(nil)

    func set(_ value: StatusService?) { service.withLock { $0 = value } }
    var current: StatusService? { service.withLock { $0 } }

    static let unavailable = HTTPResponse.matrixError(.serviceUnavailable, "M_UNAVAILABLE", "The Status server is not running")

    func add(to router: inout Router, gorush: Bool) {
        router.add(.exact("/_status/v1/identity"), [.GET]) { [self] _ in
            guard let server = current?.server else { return Self.unavailable }
            return .json(
                .ok,
                [
                    "public_key": .string("0x" + server.publicKey.compressed.hex),
                    "public_key_uncompressed": .string("0x" + server.publicKey.uncompressed.hex),
                ])
        }
        router.add(.exact("/_status/v1/message"), [.POST]) { [self] request in
            guard let server = current?.server else { return Self.unavailable }
            switch await server.handle(Array(request.body.readableBytesView)) {
            case .success(let bytes):
                var response = HTTPResponse(status: .ok, body: ByteBuffer(bytes: bytes))
                response.headers.add(name: "Content-Type", value: "application/x-protobuf")
                return response
            case .failure(let error):
                return .matrixError(.init(statusCode: error.status), error.errcode, error.message)
            }
        }
        guard gorush else { return }
        router.add(.exact("/api/push"), [.POST]) { [self] request in
            guard let api = current?.gorush else { return Self.unavailable }
            let answer = await api.handle(body: Array(request.body.readableBytesView))
            return .json(.init(statusCode: answer.status), answer.body)
        }
        router.add(.exact("/healthz"), [.GET, .HEAD]) { _ in .empty(.ok) }
        router.add(.exact("/api/stat/app"), [.GET]) { [self] _ in
            guard let api = current?.gorush else { return Self.unavailable }
            return .json(.ok, api.appStats())
        }
    }
}
