package import Pushkins
import Synchronization

/// APNs senders for an app's other host (its development host, for the relay's and ADAMANT's
/// sandbox devices): one per app and host, made on first request and shared by every front end
/// that asks (docs/architecture.md, "Front ends"). The gateway closes them with the pushkins.
package final class HostSenders: Sendable {
    private let made = Mutex<[Key: any APNsSending]>([:])

    private struct Key: Hashable {
        var app: String
        var baseURL: String
    }

    package init() {}

    /// `app` itself when it already sends to `baseURL`; otherwise its sender for that host, with
    /// the app's credentials and settings, named `<app> (<host>)` in logs and metrics.
    package func sender(of app: any APNsSending, baseURL: String) throws -> any APNsSending {
        if app.baseURL == baseURL { return app }
        let key = Key(app: app.name, baseURL: baseURL)
        return try made.withLock { table in
            if let existing = table[key] { return existing }
            let host = APNsHosts.label(baseURL)
            let sender = try app.sibling(baseURL: baseURL, name: "\(app.name) (\(host))")
            table[key] = sender
            return sender
        }
    }

    /// Every sender made, to close at shutdown.
    package var all: [any Pushkin] { made.withLock { Array($0.values) } }
}
