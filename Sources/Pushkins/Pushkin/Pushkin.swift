package import HeraldCore
package import HeraldUpstream
package import Logging
import Tracing

/// A push provider for one configured app (one key of `apps:`).
///
/// A pushkin turns a notification into a request to its upstream (APNs, FCM, a Web Push
/// service) and reports, per device, what became of it. It never throws: every failure is an
/// outcome, so one device cannot take the others of a request down with it.
package protocol Pushkin: Sendable {
    /// The app key from the config (an app id or a glob).
    var name: String { get }
    /// The pushkin's `type` as written in config: `webpush`, `apns`, `gcm`.
    var type: PushkinType { get }

    /// Public facts an operator needs at start-up (a Web Push app's `application_server_key`),
    /// logged once and printed by `herald vapid-key`. Never secrets.
    var startupDetails: [String: String] { get }

    /// One device's outcome, with what its upstream call left for the delivery trace.
    func dispatch(_ notification: PushNotification, device: Device, context: DispatchContext) async -> DeviceResult

    /// Dispatches every device of one notification that routes to this pushkin. The default fans
    /// out concurrently; a provider with a batch API (legacy FCM) overrides it.
    func dispatch(_ notification: PushNotification, devices: [Device], context: DispatchContext) async -> [DeviceResult]

    /// Releases connections; called once at shutdown.
    func shutdown() async
}

extension Pushkin {
    package func dispatch(_ notification: PushNotification, devices: [Device], context: DispatchContext) async -> [DeviceResult] {
        await dispatchEach(notification, devices: devices, context: context)
    }

    /// One `dispatch(_:device:context:)` per device, concurrently, each in a span; outcomes in
    /// device order.
    ///
    /// With `admission`, a device's dispatch starts only once it holds one of the limiter's
    /// permits, taken in arrival order and held until its outcome is known: the devices beyond the
    /// upstream's capacity wait as entries of this list, not as dispatches that have built their
    /// request and hold its memory (docs/architecture.md, "Admission"). A device whose task is
    /// cancelled while it waits fails as not dispatched.
    package func dispatchEach(
        _ notification: PushNotification, devices: [Device], context: DispatchContext, admission: AsyncLimiter? = nil
    ) async -> [DeviceResult] {
        if devices.count == 1 {
            return [
                await admitted(admission, notStarted: Self.notAdmitted) {
                    await spannedDispatch(notification, device: devices[0], context: context)
                }
            ]
        }
        return await fanOut(devices, admission: admission, notStarted: Self.notAdmitted) { device in
            await self.spannedDispatch(notification, device: device, context: context)
        }
    }

    /// A device whose task was cancelled while it waited for admission, or that waited longer than
    /// the admission allows.
    static var notAdmitted: DeviceResult { DeviceResult(.failed(reason: .localError("not admitted in time"))) }

    package func shutdown() async {}

    package var startupDetails: [String: String] { [:] }

    /// `dispatch(_:device:context:)` in a span named after the app, with its outcome and reason.
    func spannedDispatch(_ notification: PushNotification, device: Device, context: DispatchContext) async -> DeviceResult {
        guard Spans.enabled else { return await dispatch(notification, device: device, context: context) }
        return await dispatchInSpan(notification, device: device, context: context)
    }

    /// Out of line, so that the span's frame (the span, its name and attributes) is taken from the
    /// task's allocator only when tracing is on, not by every device's dispatch (docs/architecture.md,
    /// "Values on the notify path").
    @inline(never)
    private func dispatchInSpan(_ notification: PushNotification, device: Device, context: DispatchContext) async -> DeviceResult {
        await withSpan("dispatch \(name)", ofKind: .internal) { span in
            guard span.isRecording else { return await dispatch(notification, device: device, context: context) }
            span.attributes["herald.pushkin"] = name
            span.attributes["herald.pushkin.type"] = type.rawValue
            let result = await dispatch(notification, device: device, context: context)
            span.attributes["herald.outcome"] = result.outcome.label
            if let reason = result.outcome.reason { span.attributes["herald.reason"] = reason.label }
            return result
        }
    }
}

/// What a dispatch needs besides the notification: the request's id and logger.
package struct DispatchContext: Sendable {
    /// Carries the request's id in its metadata (`request_id`), where one request has an id.
    package var logger: Logger

    package init(logger: Logger) {
        self.logger = logger
    }
}
