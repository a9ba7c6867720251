package import Logging

/// The logger a store gives PostgresNIO's pool: the store's own, but for the pool's line on each
/// failed connection attempt ("Connection creation failed"), which PostgresNIO writes at `info`
/// on every retry (ten in the first three seconds of an outage, for each connection it keeps
/// open), with its error in PostgresNIO's own words. That line goes out at `debug`: the store's
/// health says the failure once, in words and with its fix (`PostgresStartCheck`, the silent
/// store's probe, `ComponentHealth`).
package enum PostgresPoolLog {
    package static let connectFailed = "Connection creation failed"

    package static func logger(_ store: Logger) -> Logger {
        Logger(label: store.label) { _ in Handler(store: store) }
    }

    struct Handler: LogHandler {
        var store: Logger

        var logLevel: Logger.Level {
            get { store.logLevel }
            set { store.logLevel = newValue }
        }

        var metadata: Logger.Metadata {
            get { store.handler.metadata }
            set { store.handler.metadata = newValue }
        }

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { store[metadataKey: key] }
            set { store[metadataKey: key] = newValue }
        }

        func log(event: LogEvent) {
            var event = event
            if event.level == .info, event.message.description == PostgresPoolLog.connectFailed { event.level = .debug }
            guard store.logLevel <= event.level else { return }
            store.handler.log(event: event)
        }
    }
}
