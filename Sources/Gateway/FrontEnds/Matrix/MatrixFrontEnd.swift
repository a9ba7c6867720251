import HeraldCore
import HeraldHTTPServer

/// The Matrix push gateway API: `POST /_matrix/push/v1/notify` (Sygnal-compatible) and the
/// UnifiedPush discovery answer on `GET`. It serves every app of `apps:`.
struct MatrixFrontEnd: FrontEnd {
    let name = "matrix"
    let notify: NotifyHandler
    /// Whether a `type: unifiedpush` app is configured: only then does `GET` answer UnifiedPush's
    /// discovery, so that UnifiedPush clients do not pick a gateway that would reject their pushers.
    let unifiedPush: Bool

    func drained() async { await notify.inFlight.untilNone() }

    func addRoutes(to routes: inout RouteBuilder) {
        let notify = self.notify
        let unifiedPush = self.unifiedPush
        routes.add(.subtree("/_matrix/push/v1/notify"), [.POST], answerDeadline: notify.answerDeadline) { try await notify.handle($0) }
        routes.add(.subtree("/_matrix/push/v1/notify"), [.GET]) { _ in
            guard unifiedPush else { throw ServerError.notFound }
            return .json(.ok, ["unifiedpush": ["gateway": "matrix"]])
        }
    }
}

struct MatrixFrontEndFactory: FrontEndFactory {
    let sections: [String] = []
    let reloadable = true

    func makeFrontEnds(_ context: FrontEndContext, diagnostics: ConfigDiagnostics) -> [any FrontEnd] {
        let notify = NotifyHandler(
            dispatcher: context.dispatcher, metrics: context.metrics, logger: context.logger, clock: context.clock,
            sources: context.config.notify.sources)
        return [MatrixFrontEnd(notify: notify, unifiedPush: context.pushkins.contains { $0.type == .unifiedPush })]
    }
}
