import HeraldCore
import NIOCore

/// A connection refused because its peer is not a global address.
package struct PeerAddressRefused: Error, Sendable, CustomStringConvertible {
    package var reason: String
    package var description: String { reason }
}

/// Checks the address each new connection actually reached, after connecting and before the
/// connection is handed a request. The endpoint policy resolved the name and checked its
/// addresses; the HTTP client resolves it again to connect, and a name may answer differently the
/// second time (DNS rebinding). Checking the connected socket itself closes that gap: no request
/// byte is ever written to a loopback, private or reserved address that was not allowed.
///
/// `UpstreamConnector` runs it on each new connection of Herald's own transports.
enum PeerAddressCheck {
    @Sendable static func check(_ channel: any Channel) -> EventLoopFuture<Void> {
        let kind = channel.remoteAddress.map(NetworkAddress.classify) ?? .nonPublic("unknown")
        guard case .nonPublic(let name) = kind else { return channel.eventLoop.makeSucceededVoidFuture() }
        channel.close(promise: nil)
        return channel.eventLoop.makeFailedFuture(PeerAddressRefused(reason: "endpoint connected to a \(name) address"))
    }
}
