import HeraldCore
import Testing

/// The wait a reload makes for requests in progress: an event, ended by the last one, or by
/// cancellation (a reload whose grace period ended does not wait, nor spin, any longer).
@Suite struct InFlightTests {
    @Test(.timeLimit(.minutes(1))) func theWaitEndsWhenTheLastLeaves() async {
        let requests = InFlight()
        await requests.untilNone()  // none: at once
        requests.enter()
        requests.enter()
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await requests.untilNone() }
            requests.leave()
            #expect(requests.current == 1)
            requests.leave()
            await group.waitForAll()
        }
        #expect(requests.current == 0)
    }

    @Test(.timeLimit(.minutes(1))) func theWaitEndsWhenCancelled() async {
        let requests = InFlight()
        requests.enter()
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await requests.untilNone() }
            group.cancelAll()
            await group.waitForAll()
        }
        #expect(requests.current == 1)
    }
}
