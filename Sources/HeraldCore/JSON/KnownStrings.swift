/// Strings a parse hands back as the one copy it was given, rather than making a new one each
/// time: the keys and values every request repeats (a configured app id, `sender_display_name`).
/// Only those over 15 UTF-8 bytes are worth it: a shorter string is held inline and costs no
/// allocation anyway (docs/architecture.md, "Values on the notify path").
package struct KnownStrings: Sendable {
    /// The strings by their length in UTF-8 bytes (the index), each with its bytes: a lookup is an
    /// index and a comparison or two, cheaper than the allocation it saves.
    private var byLength: [[(bytes: [UInt8], string: String)]] = []

    package static var empty: KnownStrings { KnownStrings([]) }

    package init(_ strings: some Sequence<String>) {
        for string in strings where string.utf8.count > 15 {
            let bytes = Array(string.utf8)
            if byLength.count <= bytes.count { byLength += Array(repeating: [], count: bytes.count + 1 - byLength.count) }
            guard !byLength[bytes.count].contains(where: { $0.bytes == bytes }) else { continue }
            byLength[bytes.count].append((bytes, string))
        }
    }

    package var isEmpty: Bool { byLength.isEmpty }

    /// The known string whose UTF-8 is `bytes`, if there is one.
    package func string(for bytes: UnsafeBufferPointer<UInt8>) -> String? {
        guard bytes.count > 15, bytes.count < byLength.count else { return nil }
        for candidate in byLength[bytes.count] {
            let equal = candidate.bytes.withUnsafeBufferPointer { known in
                known.elementsEqual(bytes)
            }
            if equal { return candidate.string }
        }
        return nil
    }
}
