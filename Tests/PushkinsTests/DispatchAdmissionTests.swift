import HeraldTestSupport
import Logging
import Synchronization
import Testing

@testable import HeraldCore
@testable import HeraldUpstream
@testable import Pushkins

/// `dispatchEach` with an admission limiter: the devices of a request beyond the limiter's
/// permits do not start their dispatch until a permit frees.
@Suite struct DispatchAdmissionTests {
    /// Counts the dispatches running at once; rejects the devices whose pushkey starts with "r".
    /// Each dispatch stays running until `overlap` dispatches have run at once, so that the peak
    /// is reached by events, not by a pause.
    final class CountingPushkin: Pushkin {
        let overlap: Int
        /// When set, every dispatch waits for it to open.
        let hold: ReadinessGate<Void>?
        init(overlap: Int = 1, hold: ReadinessGate<Void>? = nil) {
            self.overlap = overlap
            self.hold = hold
        }
        let name = "com.example.counting"
        let type = PushkinType("test")
        let running = AtomicCounter()
        let peak = AtomicCounter()
        let started = AtomicCounter()

        func dispatch(_ notification: PushNotification, device: Device, context: DispatchContext) async -> DeviceResult {
            started.add(1)
            let now = running.add(1)
            while true {
                let seen = peak.current
                if now <= seen || peak.increment(ifBelow: now) { break }
            }
            _ = await eventually(within: .seconds(10)) { self.peak.current >= self.overlap }
            if let hold { try? await hold.wait() }
            running.add(-1)
            return DeviceResult(device.pushkey.hasPrefix("r") ? .rejected(reason: .unknownAppId) : .delivered)
        }
    }

    static let context = DispatchContext(logger: Logger(label: "test"))

    static func devices(_ count: Int) -> [Device] {
        (0..<count).map { Device(appId: "com.example.counting", pushkey: $0 % 3 == 0 ? "r\($0)" : "d\($0)") }
    }

    @Test func noMoreDevicesInDispatchThanPermitsAndOutcomesInDeviceOrder() async {
        let pushkin = CountingPushkin(overlap: 4)
        let admission = AsyncLimiter(limit: 4)
        let devices = Self.devices(60)
        // Two requests share the limiter, as the notifies of one app do.
        async let first = pushkin.dispatchEach(PushNotification(), devices: devices, context: Self.context, admission: admission)
        async let second = pushkin.dispatchEach(PushNotification(), devices: devices, context: Self.context, admission: admission)
        let outcomes = await [first, second]
        #expect(pushkin.started.current == 120)
        #expect(pushkin.peak.current <= 4)
        #expect(pushkin.peak.current > 1)
        #expect(admission.inUse == 0)
        for requestOutcomes in outcomes {
            #expect(requestOutcomes.map(\.outcome.label) == devices.map { $0.pushkey.hasPrefix("r") ? "rejected" : "delivered" })
        }
    }

    @Test func withoutAdmissionEveryDeviceStartsAtOnce() async {
        let pushkin = CountingPushkin(overlap: 5)
        let outcomes = await pushkin.dispatchEach(PushNotification(), devices: Self.devices(60), context: Self.context)
        #expect(outcomes.count == 60)
        #expect(pushkin.peak.current > 4)
    }

    /// A request cancelled while its devices wait: those never admitted fail as not dispatched
    /// (a 502, so the homeserver retries them), the admitted ones finish, and no permit is lost.
    @Test func devicesWaitingWhenTheRequestIsCancelledFailAndNoPermitIsLost() async throws {
        let hold = ReadinessGate<Void>()
        let pushkin = CountingPushkin(hold: hold)
        let admission = AsyncLimiter(limit: 2)
        try await admission.acquire()
        let task = Task {
            await pushkin.dispatchEach(PushNotification(), devices: Self.devices(5), context: Self.context, admission: admission)
        }
        // One device admitted (the one free permit), the next waiting for the permit held here.
        await eventually { admission.waiting > 0 }
        #expect(admission.waiting == 1)
        task.cancel()
        hold.open(())
        let outcomes = await task.value
        admission.release()
        #expect(pushkin.started.current == 1)
        #expect(outcomes[0].outcome.label == "rejected")
        for outcome in outcomes.dropFirst() {
            #expect(outcome.outcome.label == "failed")
            #expect(outcome.outcome.reason == .localError("not admitted in time"))
        }
        #expect(admission.inUse == 0)
    }

    @Test func oneDeviceHoldsAPermitWhileItIsDispatched() async throws {
        let pushkin = CountingPushkin()
        let admission = AsyncLimiter(limit: 1)
        try await admission.acquire()
        let task = Task {
            await pushkin.dispatchEach(
                PushNotification(), devices: [Device(appId: "a", pushkey: "d")], context: Self.context, admission: admission)
        }
        await eventually { admission.waiting > 0 }
        #expect(pushkin.started.current == 0)
        admission.release()
        #expect(await task.value.map(\.outcome.label) == ["delivered"])
        #expect(admission.inUse == 0)
    }
}
