import HeraldCore
import HeraldHTTPServer
import NIOCore
package import NIOHTTP1
import Pushkins
import ServiceLifecycle
import StatusAdapter

/// The Status push-notification server's own API (docs/status-protocol.md):
/// `GET /_status/v1/identity` and `POST /_status/v1/message`. Errors are Matrix-style JSON.
struct StatusFrontEnd: FrontEnd {
    let name = "status"
    let service: StatusService

    var appsInUse: Set<String> { Set(service.config.apps.values) }

    func addRoutes(to routes: inout RouteBuilder) {
        let service = self.service
        routes.add(.exact("/_status/v1/identity"), [.GET]) { _ in
            let server = try Self.server(service)
            return .json(
                .ok,
                [
                    "public_key": .string("0x" + server.publicKey.compressed.hex),
                    "public_key_uncompressed": .string("0x" + server.publicKey.uncompressed.hex),
                ])
        }
        routes.add(.exact("/_status/v1/message"), [.POST], maxBodyBytes: service.config.maxMessageBytes) { request in
            let bytes = try await Self.server(service).handle(Array(request.body.readableBytesView)).get()
            var response = ServerResponse(status: .ok, body: ByteBuffer(bytes: bytes))
            response.headers.add(name: "Content-Type", value: "application/x-protobuf")
            return response
        }
    }

    var services: [any Service] { service.services }
    var health: [ComponentHealth] { service.health }

    func waitUntilReady() async throws { try await service.waitUntilReady() }

    static func server(_ service: StatusService) throws(ServerError) -> StatusServer {
        guard let server = service.server else { throw .unavailable("The Status server is not running") }
        return server
    }
}

extension StatusRequestError: HTTPResponseError {
    package var status: HTTPResponseStatus { HTTPResponseStatus(statusCode: statusCode) }
}

/// Builds the Status and gorush front ends from the `status:` section.
struct StatusFrontEndFactory: FrontEndFactory {
    let sections = ["status"]

    func makeFrontEnds(_ context: FrontEndContext, diagnostics: ConfigDiagnostics) -> [any FrontEnd] {
        guard let section = context.section("status", diagnostics: diagnostics) else { return [] }
        let config = StatusConfig.read(section)
        guard config.enabled else { return [] }
        var pushkins: [StatusPlatform: any Pushkin] = [:]
        for platform in StatusPlatform.all {
            guard let app = config.apps[platform] else { continue }
            let key = "status.\(platform.configKey)"
            if let pushkin = context.pushkin(named: app) {
                if pushkin.type == platform.pushkinType {
                    pushkins[platform] = pushkin
                } else {
                    diagnostics.error(key, "app '\(app)' is of type \(pushkin.type), not \(platform.pushkinType)")
                }
            } else if !context.config.apps.contains(where: { $0.key == app }) {
                diagnostics.error(key, "no app '\(app)' in apps")
            }
        }
        let sender = PushkinStatusSender(pushkins: pushkins)
        Self.warnOfAnOpenGorushAPI(config.gorush, listening: context.config.http.bindAddresses, diagnostics: diagnostics)
        guard !context.readOnly else { return [] }
        var logger = context.logger
        logger[metadataKey: "component"] = "status"
        let service: StatusService
        do {
            service = try StatusService(
                config: config, sender: sender, logger: logger, metrics: context.metrics.factory, dispatcher: context.dispatcher,
                clock: context.clock)
        } catch {
            diagnostics.error("status.store", "\(error)")
            return []
        }
        var frontEnds: [any FrontEnd] = [StatusFrontEnd(service: service)]
        if config.gorush.enabled {
            let api = GorushAPI(
                config: config.gorush, delivery: sender, queue: { try await service.store() }, logger: logger,
                metrics: context.metrics.factory, dispatcher: context.dispatcher, clock: context.clock)
            frontEnds.append(
                GorushFrontEnd(
                    api: api, maxBodyBytes: config.maxMessageBytes,
                    apps: Set(config.apps.values),
                    access: GorushAccess(networks: config.gorush.allowedNetworks, token: config.gorush.authToken)))
        }
        return frontEnds
    }

    /// gorush's API pushes with the operator's credentials for whoever reaches it: listening
    /// beyond loopback with no token and an allow-list open to public addresses is an open relay.
    static func warnOfAnOpenGorushAPI(_ gorush: StatusConfig.Gorush, listening: [String], diagnostics: ConfigDiagnostics) {
        guard gorush.enabled, gorush.authToken == nil else { return }
        let beyondLoopback = listening.contains { address in
            guard address != "localhost" else { return false }
            guard let network = IPNetwork(address) else { return true }
            return !(IPNetwork("127.0.0.0/8")?.contains(network) ?? false) && !(IPNetwork("::1")?.contains(network) ?? false)
        }
        let open = gorush.allowedNetworks.filter(\.includesPublicAddresses)
        guard beyondLoopback, !open.isEmpty else { return }
        diagnostics.warning(
            "status.gorush.allowed_networks",
            "\(open.map(\.description).joined(separator: ", ")) includes public addresses and the API listens on \(listening.joined(separator: ", ")) with no auth_token_file: anyone who reaches it can push with this server's credentials"
        )
    }
}
