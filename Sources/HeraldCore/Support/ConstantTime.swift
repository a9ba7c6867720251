/// Comparisons whose time does not depend on where two secrets differ.
package enum ConstantTime {
    /// Whether `a` and `b` hold the same bytes, in a time that depends only on their lengths.
    package static func equals(_ a: some Collection<UInt8>, _ b: some Collection<UInt8>) -> Bool {
        var difference = UInt8(truncatingIfNeeded: a.count ^ b.count)
        var left = a.makeIterator()
        for byte in b {
            // Compared against a itself once it is shorter, so that the loop's length is b's.
            difference |= (left.next() ?? byte ^ 0xFF) ^ byte
        }
        return difference == 0 && a.count == b.count
    }
}
