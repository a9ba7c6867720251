import Metrics
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
}
