/// Which protocol `NegotiatedUpstream` speaks to its origin, as a value: unknown until the first
/// connection's ALPN answer, then HTTP/2 or HTTP/1.1 for the life of the transport. An origin that
/// cannot be offered HTTP/2 (`http://`, or `http2` off) starts at HTTP/1.1. Tested without a
/// socket (`ProtocolChoiceTests`).
package struct ProtocolChoice: Sendable, Equatable {
    /// What the origin's server agreed to.
    package enum Spoken: UInt8, Sendable {
        case unknown, http2, http1
    }

    package private(set) var spoken: Spoken

    /// `offersHTTP2`: the origin is https and `http2` is on.
    init(offersHTTP2: Bool) { spoken = offersHTTP2 ? .unknown : .http1 }

    /// Where the next request goes: true for an HTTP/2 stream (the first one also asks the server).
    var triesHTTP2: Bool { spoken != .http1 }

    /// An answer came back over HTTP/2.
    mutating func answeredOverHTTP2() {
        if spoken == .unknown { spoken = .http2 }
    }

    /// The server picked HTTP/1.1 or nothing (`UpstreamConnectionError.notHTTP2`), before any
    /// request was written: this request and every later one go over HTTP/1.1.
    mutating func refusedHTTP2() { spoken = .http1 }
}
