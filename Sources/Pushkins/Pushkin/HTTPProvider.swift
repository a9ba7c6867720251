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

    init(
        type: PushkinType, name: String, baseURL: String, settings: UpstreamSettings, retry: RetryPolicy,
        environment: PushkinEnvironment
    ) throws {
        client = try UpstreamHTTPClient(settings: settings)
        transport = try NegotiatedUpstream(origin: baseURL, settings: settings, contexts: environment.tlsContexts)
        upstream = UpstreamCall(
            transport: transport, policy: retry,
            metrics: UpstreamMetrics(type: type, pushkin: name, factory: environment.metrics, clock: environment.clock),
            clock: environment.clock)
    }

    func shutdown() async {
        await transport.shutdown()
        await client.shutdown()
    }
}
