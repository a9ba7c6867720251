import Metrics
import Synchronization

/// Counter handles made once per (label, dimensions) and kept, so that counting an event is a
/// dictionary lookup rather than a trip through the metrics factory's registry.
public final class CounterCache: Sendable {
    public let factory: any MetricsFactory
    private let counters = Mutex<[String: Counter]>([:])

    public init(factory: any MetricsFactory) { self.factory = factory }

    public func counter(_ label: String, _ dimensions: [(String, String)] = []) -> Counter {
        var key = label
        for (name, value) in dimensions { key += "\u{1F}\(name)=\(value)" }
        return counters.withLock { table in
            if let existing = table[key] { return existing }
            let made = Counter(label: label, dimensions: dimensions, factory: factory)
            table[key] = made
            return made
        }
    }

    public func increment(_ label: String, _ dimensions: [(String, String)] = [], by amount: Int64 = 1) {
        counter(label, dimensions).increment(by: amount)
    }
}
