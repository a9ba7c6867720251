import Metrics
import Synchronization
import Testing

@testable import HeraldCore
@testable import HeraldUpstream
@testable import Pushkins

/// `CounterCache`: one handle per series, whatever the label and dimensions contain.
@Suite struct CounterCacheTests {
    @Test func aSeriesIsMadeOnceAndDimensionsAreNeverConfused() {
        let cache = CounterCache(factory: NOOPMetricsHandler.instance)
        let first = cache.counter("herald_x_total", [("pushkin", "a"), ("outcome", "delivered")])
        #expect(cache.counter("herald_x_total", [("pushkin", "a"), ("outcome", "delivered")]) === first)
        #expect(cache.counter("herald_x_total", [("pushkin", "a"), ("outcome", "failed")]) !== first)
        #expect(cache.counter("herald_y_total", [("pushkin", "a"), ("outcome", "delivered")]) !== first)
        #expect(cache.counter("herald_x_total", [("pushkin", "a")]) !== first)
        // Names and values that a joined key string would run together.
        let joined = cache.counter("m", [("a", "b=c")])
        #expect(cache.counter("m", [("a=b", "c")]) !== joined)
        #expect(cache.counter("m", [("a", "b"), ("c", "d")]) !== cache.counter("m", [("a", "b\u{1F}c=d")]))
    }

    /// The one- and three-dimension forms (no array on a notify's path) count the series the
    /// array form names, and a series with an empty dimension value is not one with fewer.
    @Test func theArrayFreeFormsCountTheSameSeries() {
        let factory = CountingFactory()
        let cache = CounterCache(factory: factory)
        cache.increment("herald_x_total", ("pushkin", "a"))
        cache.increment("herald_x_total", [("pushkin", "a")], by: 2)
        cache.increment("herald_y_total", ("pushkin", "a"), ("outcome", "failed"), ("reason", ""))
        cache.increment("herald_y_total", [("pushkin", "a"), ("outcome", "failed"), ("reason", "")])
        cache.increment("herald_y_total", [("pushkin", "a"), ("outcome", "failed")])
        cache.increment("herald_z_total", [("a", "1"), ("b", "2"), ("c", "3"), ("d", "4")])
        cache.increment("herald_z_total", [("a", "1"), ("b", "2"), ("c", "3"), ("d", "5")])
        #expect(
            factory.totals == [
                "herald_x_total pushkin=a": 3, "herald_y_total pushkin=a outcome=failed reason=": 2,
                "herald_y_total pushkin=a outcome=failed": 1, "herald_z_total a=1 b=2 c=3 d=4": 1,
                "herald_z_total a=1 b=2 c=3 d=5": 1,
            ])
    }
}

/// Sums every counter's increments by series, to see which series a count went to.
private final class CountingFactory: MetricsFactory, Sendable {
    let sums = Mutex<[String: Int64]>([:])
    var totals: [String: Int64] { sums.withLock { $0 } }

    final class Handler: CounterHandler, Sendable {
        let series: String
        let factory: CountingFactory
        init(series: String, factory: CountingFactory) {
            self.series = series
            self.factory = factory
        }
        func increment(by amount: Int64) { factory.sums.withLock { $0[series, default: 0] += amount } }
        func reset() {}
    }

    func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler {
        Handler(series: ([label] + dimensions.map { "\($0.0)=\($0.1)" }).joined(separator: " "), factory: self)
    }
    func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
        NOOPMetricsHandler.instance
    }
    func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler { NOOPMetricsHandler.instance }
    func destroyCounter(_ handler: any CounterHandler) {}
    func destroyRecorder(_ handler: any RecorderHandler) {}
    func destroyTimer(_ handler: any TimerHandler) {}
}
