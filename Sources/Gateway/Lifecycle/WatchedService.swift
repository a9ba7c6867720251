import Logging
import ServiceLifecycle
import Synchronization

/// A service of the group under a name an operator can read, which says when it outlived the
/// graceful shutdown. The group asks its services to stop one at a time, in the reverse of their
/// order, and cancels whatever still runs once `http.shutdown_grace_period` has passed. This logs
/// the service that was asked and had not stopped (the one that held the shutdown up), the ones
/// cancelled before their turn, and when each ended. A service that never ends is the one named
/// without its "stopped" line (docs/operations.md, "Shutdown").
struct WatchedService: Service, CustomStringConvertible {
    let service: any Service
    let name: String
    let logger: Logger

    init(_ service: any Service, logger: Logger) {
        self.service = service
        self.name = String(describing: type(of: service))
        self.logger = logger
    }

    var description: String { name }

    func run() async throws {
        let (name, logger, service) = (self.name, self.logger, self.service)
        let asked = Atomic(false)
        defer {
            if Task.isCancelled { logger.notice("Stopped after cancellation", metadata: ["service": "\(name)"]) }
        }
        try await withTaskCancellationHandler {
            try await withGracefulShutdownHandler {
                try await service.run()
            } onGracefulShutdown: {
                asked.store(true, ordering: .relaxed)
            }
        } onCancel: {
            if asked.load(ordering: .relaxed) {
                logger.warning("Did not stop within the shutdown grace period; cancelled", metadata: ["service": "\(name)"])
            } else {
                logger.notice("Cancelled before its turn to stop", metadata: ["service": "\(name)"])
            }
        }
    }
}
