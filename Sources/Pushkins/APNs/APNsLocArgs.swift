/// An alert's `loc-args`: at most three strings (docs/compatibility/apns.md), held in place rather
/// than in an array of their own.
package struct APNsLocArgs: RandomAccessCollection, Sendable, Equatable {
    private let first: String
    private let second: String?
    private let third: String?

    /// A third argument counts only after a second.
    package init(_ first: String, _ second: String? = nil, _ third: String? = nil) {
        self.first = first
        self.second = second
        self.third = second == nil ? nil : third
    }

    package var count: Int { second == nil ? 1 : third == nil ? 2 : 3 }

    package var startIndex: Int { 0 }
    package var endIndex: Int { count }

    package subscript(position: Int) -> String {
        switch position {
        case 0: return first
        case 1: return second ?? ""
        default: return third ?? ""
        }
    }
}
