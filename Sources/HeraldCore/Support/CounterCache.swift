package import Metrics
import Synchronization

/// Counter handles made once per (label, dimensions) and kept, so that counting an event is a
/// dictionary lookup rather than a trip through the metrics factory's registry. The lookup hashes
/// the label and dimensions as they are given, without building a key string from them.
package final class CounterCache: Sendable {
    package let factory: any MetricsFactory
    private let counters = Mutex<[Key: Counter]>([:])

    package init(factory: any MetricsFactory) { self.factory = factory }

    package func counter(_ label: String, _ dimensions: [(String, String)] = []) -> Counter {
        let key = Key(label: label, dimensions: dimensions)
        return counters.withLock { table in
            if let existing = table[key] { return existing }
            let made = Counter(label: label, dimensions: dimensions, factory: factory)
            table[key] = made
            return made
        }
    }

    package func increment(_ label: String, _ dimensions: [(String, String)] = [], by amount: Int64 = 1) {
        counter(label, dimensions).increment(by: amount)
    }

    /// A series: its label and its dimensions, in the order given.
    private struct Key: Hashable, Sendable {
        let label: String
        let dimensions: [(String, String)]

        static func == (a: Key, b: Key) -> Bool {
            a.label == b.label && a.dimensions.count == b.dimensions.count
                && zip(a.dimensions, b.dimensions).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        }

        func hash(into hasher: inout Hasher) {
            hasher.combine(label)
            hasher.combine(dimensions.count)
            for (name, value) in dimensions {
                hasher.combine(name)
                hasher.combine(value)
            }
        }
    }
}
