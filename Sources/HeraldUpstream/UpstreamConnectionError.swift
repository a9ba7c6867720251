import HeraldCore
package import NIOHTTP2

/// Why a request on one of Herald's own connections (`HTTP1Upstream`, `HTTP2Upstream`) got no
/// answer. All are network errors to `UpstreamCall`: retried within the app's policy.
package enum UpstreamConnectionError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The stream or its connection closed before a complete answer.
    case closedUnanswered
    /// The server reset the stream.
    case reset(HTTP2ErrorCode)
    /// The answer had no valid `:status`.
    case malformedResponse
    /// TLS did not agree on HTTP/2 (ALPN `h2`).
    case notHTTP2
    /// No connection within `connect_timeout`.
    case connectTimeout
    /// The outbound proxy answered CONNECT with this status (or closed: nil).
    case proxyRefused(Int?)
    /// The transport was shut down.
    case shutDown

    package var description: String {
        switch self {
        case .closedUnanswered: "the connection closed before an answer"
        case .reset(let code): "the server reset the stream (\(code))"
        case .malformedResponse: "an answer without a valid :status"
        case .notHTTP2: "the server does not speak HTTP/2"
        case .connectTimeout: "no connection within the connect timeout"
        case .proxyRefused(let status?): "the proxy answered CONNECT with \(status)"
        case .proxyRefused(nil): "the proxy closed the connection during CONNECT"
        case .shutDown: "shut down"
        }
    }
}
