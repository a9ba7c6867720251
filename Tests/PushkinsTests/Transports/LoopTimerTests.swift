import HeraldCore
import HeraldTestSupport
import NIOCore
import NIOEmbedded
import Testing

/// The one timer routine (`LoopTimerOwner`): armed by the earliest deadline asked for, it calls its
/// owner when it fires and is armed again by the deadline the owner says is left; on an embedded
/// loop's time, without a socket.
@Suite struct LoopTimerTests {
    /// An owner whose work is a list of deadlines: when the timer fires it ends those due and
    /// answers the earliest left.
    final class Owner: ChannelInboundHandler, LoopTimerOwner {
        typealias InboundIn = Never
        var timer: LoopTimer
        var pending: [NIODeadline] = []
        var ended: [NIODeadline] = []
        var fires = 0

        init(clock: any LoopClock) { timer = LoopTimer(clock: clock) }

        func add(_ deadline: NIODeadline, context: ChannelHandlerContext) {
            pending.append(deadline)
            armTimer(by: deadline, context: context)
        }

        func timerFired(context: ChannelHandlerContext) -> NIODeadline? {
            fires += 1
            let now = timer.now(context.eventLoop)
            ended += pending.filter { $0 <= now }
            pending.removeAll { $0 <= now }
            return pending.min()
        }
    }

    func setUp(clock: any LoopClock = EventLoopClock()) throws -> (EmbeddedChannel, Owner, ChannelHandlerContext) {
        let owner = Owner(clock: clock)
        let channel = EmbeddedChannel(handler: owner)
        let context = try channel.pipeline.syncOperations.context(handler: owner)
        return (channel, owner, context)
    }

    @Test func aLaterDeadlineIsMetByTheTimerArmedAgainWhenTheEarlierFires() throws {
        let (channel, owner, context) = try setUp()
        let loop = channel.embeddedEventLoop
        let start = loop.now
        owner.add(start + .seconds(10), context: context)
        loop.advanceTime(by: .seconds(4))
        owner.add(start + .seconds(14), context: context)  // later than the armed one: a comparison
        loop.advanceTime(by: .seconds(6))
        #expect(owner.ended == [start + .seconds(10)])
        #expect(owner.fires == 1)
        loop.advanceTime(by: .seconds(3))
        #expect(owner.ended == [start + .seconds(10)])  // armed again by 14 s, not yet due
        loop.advanceTime(by: .seconds(1))
        #expect(owner.ended == [start + .seconds(10), start + .seconds(14)])
        #expect(owner.fires == 2)
        loop.advanceTime(by: .seconds(60))
        #expect(owner.fires == 2)  // nothing left: not armed
    }

    @Test func anEarlierDeadlineArmsTheTimerEarlier() throws {
        let (channel, owner, context) = try setUp()
        let loop = channel.embeddedEventLoop
        let start = loop.now
        owner.add(start + .seconds(10), context: context)
        owner.add(start + .seconds(2), context: context)
        loop.advanceTime(by: .seconds(2))
        #expect(owner.ended == [start + .seconds(2)])
        loop.advanceTime(by: .seconds(8))
        #expect(owner.ended == [start + .seconds(2), start + .seconds(10)])
        #expect(owner.fires == 2)  // the timer armed for 10 s was replaced, not left to fire too
    }

    @Test func aCancelledTimerDoesNotFire() throws {
        let (channel, owner, context) = try setUp()
        let loop = channel.embeddedEventLoop
        owner.add(loop.now + .seconds(1), context: context)
        owner.timer.cancel()
        loop.advanceTime(by: .seconds(5))
        #expect(owner.fires == 0)
    }

    /// On a test's manual clock (what a gateway given one runs its deadlines on): the timer fires
    /// when that clock reaches the deadline, on the owner's loop, and not when the loop's own time
    /// passes it.
    @Test func onAManualClockTheTimerFiresWhenThatClockReachesTheDeadline() throws {
        let clock = ManualClock()
        let (channel, owner, context) = try setUp(clock: clock.loopClock)
        let loop = channel.embeddedEventLoop
        let start = owner.timer.now(loop)
        owner.add(start + .seconds(10), context: context)
        loop.advanceTime(by: .seconds(60))
        clock.advance(by: .seconds(9))
        loop.run()
        #expect(owner.fires == 0)
        #expect(clock.loopTimers(dueIn: .seconds(1)) == 1)
        clock.advance(by: .seconds(1))
        #expect(owner.fires == 0)  // run on the loop, not in `advance`
        loop.run()
        #expect(owner.ended == [start + .seconds(10)])
        #expect(clock.loopTimers == 0)
        owner.add(owner.timer.now(loop) + .seconds(5), context: context)
        owner.timer.cancel()
        clock.advance(by: .seconds(5))
        loop.run()
        #expect(owner.fires == 1 && clock.loopTimers == 0)
    }
}
