import HeraldCore
import HeraldUpstream

/// What a provider reached over HTTP with an OAuth-style token endpoint holds (FCM, Huawei): the
/// connections to its `base_url` (HTTP/2 where the server takes it, else HTTP/1.1:
/// `NegotiatedUpstream`), the call that sends on them (deadline, retries, metrics under the
/// pushkin's name), and a client for its token endpoint. Closed with the pushkin.
struct HTTPProvider: Sendable {
    /// For the token endpoint.
    let client: UpstreamHTTPClient
    /// For messages, on `base_url`.
    let transport: NegotiatedUpstream
    let upstream: UpstreamCall

    /// The provider's pushback holds its whole `base_url` for this app (one FCM project, one
    /// Huawei app: docs/operations.md, "Pushback"); `providerId` is the field of an accepted
    /// message's answer that names it (FCM's `name`, Huawei's `requestId`).
    init(
        type: PushkinType, name: String, baseURL: String, settings: UpstreamSettings, retry: RetryPolicy,
        environment: PushkinEnvironment, providerId: String
    ) throws {
        client = try UpstreamHTTPClient(settings: settings)
        transport = try NegotiatedUpstream(
            origin: baseURL, settings: settings, contexts: environment.tlsContexts, clock: environment.clock)
        let originClass = type == .gcm ? "fcm" : type.rawValue
        upstream = UpstreamCall(
            transport: transport, policy: retry,
            metrics: UpstreamMetrics(type: type, pushkin: name, factory: environment.metrics, clock: environment.clock),
            clock: environment.clock,
            pushback: environment.holds.map {
                PushbackScope(holds: $0, origin: .fixed("\(baseURL) (\(name))"), pushkin: name, originClass: { _ in originClass })
            },
            providerId: { response in
                guard (200..<300).contains(response.status) else { return nil }
                return Self.stringField(providerId, in: response.body.readableBytesView)
            })
    }

    /// The value of `"field": "…"` in a small JSON answer, found by a scan rather than a parse (an
    /// accepted message's answer is one short object; ids hold no escapes). Nil when absent.
    static func stringField(_ field: String, in body: some Collection<UInt8>) -> String? {
        // Read in place when the body is contiguous (an answer's buffer is): no copy of it, and
        // the key compared without being made.
        if let found = body.withContiguousStorageIfAvailable({ stringField(field, inBytes: $0) }) { return found }
        return Array(body).withUnsafeBufferPointer { stringField(field, inBytes: $0) }
    }

    private static func stringField(_ field: String, inBytes bytes: UnsafeBufferPointer<UInt8>) -> String? {
        let quote = UInt8(ascii: "\"")
        let name = field.utf8
        let keyCount = name.count + 2
        guard bytes.count > keyCount else { return nil }
        func isKey(at start: Int) -> Bool {
            bytes[start] == quote && bytes[start + keyCount - 1] == quote
                && bytes[(start + 1)..<(start + keyCount - 1)].elementsEqual(name)
        }
        guard let start = (0...(bytes.count - keyCount)).first(where: isKey) else { return nil }
        var index = start + keyCount
        while index < bytes.count, bytes[index] == UInt8(ascii: " ") || bytes[index] == UInt8(ascii: ":") { index += 1 }
        guard index < bytes.count, bytes[index] == quote else { return nil }
        index += 1
        guard let end = bytes[index...].firstIndex(of: quote), !bytes[index..<end].contains(UInt8(ascii: "\\")) else {
            return nil
        }
        return String(decoding: UnsafeBufferPointer(rebasing: bytes[index..<end]), as: UTF8.self)
    }

    func shutdown() async {
        await transport.shutdown()
        await client.shutdown()
    }
}
