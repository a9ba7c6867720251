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
        counter(Key(label: label, dimensions: dimensions))
    }

    package func increment(_ label: String, _ dimensions: [(String, String)] = [], by amount: Int64 = 1) {
        counter(label, dimensions).increment(by: amount)
    }

    /// `increment` of a series with one dimension, without an array to name it (a notify's path
    /// counts a few such events: docs/architecture.md, "Values on the notify path").
    package func increment(_ label: String, _ dimension: (String, String), by amount: Int64 = 1) {
        counter(Key(label: label, count: 1, dimension, Key.none, Key.none)).increment(by: amount)
    }

    /// `increment` of a series with three dimensions, without an array to name them.
    package func increment(
        _ label: String, _ first: (String, String), _ second: (String, String), _ third: (String, String), by amount: Int64 = 1
    ) {
        counter(Key(label: label, count: 3, first, second, third)).increment(by: amount)
    }

    private func counter(_ key: Key) -> Counter {
        counters.withLock { table in
            if let existing = table[key] { return existing }
            let made = Counter(label: key.label, dimensions: key.dimensions, factory: factory)
            table[key] = made
            return made
        }
    }

    /// A series: its label and its dimensions, in the order given. Up to three dimensions are
    /// held in place, so that looking one up allocates nothing.
    private struct Key: Hashable, Sendable {
        static let none = ("", "")
        let label: String
        let count: Int
        let first: (String, String)
        let second: (String, String)
        let third: (String, String)
        /// Those past the third.
        let more: [(String, String)]

        init(label: String, count: Int, _ first: (String, String), _ second: (String, String), _ third: (String, String)) {
            self.label = label
            self.count = count
            (self.first, self.second, self.third) = (first, second, third)
            more = []
        }

        init(label: String, dimensions: [(String, String)]) {
            self.label = label
            count = dimensions.count
            first = dimensions.count > 0 ? dimensions[0] : Self.none
            second = dimensions.count > 1 ? dimensions[1] : Self.none
            third = dimensions.count > 2 ? dimensions[2] : Self.none
            more = dimensions.count > 3 ? Array(dimensions[3...]) : []
        }

        /// Made only when the series is.
        var dimensions: [(String, String)] { Array([first, second, third].prefix(count)) + more }

        static func == (a: Key, b: Key) -> Bool {
            a.label == b.label && a.count == b.count && a.first == b.first && a.second == b.second && a.third == b.third
                && a.more.count == b.more.count && zip(a.more, b.more).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        }

        func hash(into hasher: inout Hasher) {
            hasher.combine(label)
            hasher.combine(count)
            // Unused places hold empty strings, the same in every key of that count.
            hasher.combine(first.0)
            hasher.combine(first.1)
            hasher.combine(second.0)
            hasher.combine(second.1)
            hasher.combine(third.0)
            hasher.combine(third.1)
            for (name, value) in more {
                hasher.combine(name)
                hasher.combine(value)
            }
        }
    }
}
