import HeraldHTTPServer
import NIOCore

extension InboundLimits {
    /// The listeners' limits from the `http:` section (docs/configuration.md).
    init(_ http: GatewayConfig.HTTP) {
        self.init()
        maxConnections = http.maxConnections
        requestReadTimeout = TimeAmount(http.requestReadTimeout)
        idleTimeout = TimeAmount(http.idleTimeout)
        maxDiscardedBodyBytes = http.maxDiscardedBodyBytes
        shutdownFirstRequestWait = TimeAmount(http.shutdownFirstRequestWait)
        bodyBudget = BodyBudget(limit: http.maxBufferedBodyBytes)
        trustedProxies = http.trustedProxies
    }
}
