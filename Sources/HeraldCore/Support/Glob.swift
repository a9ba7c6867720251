/// A glob as Sygnal matches app ids and endpoints (matrix-common `glob_to_regex`): `*` is any run
/// of characters (dots included), `?` exactly one, everything else literal, anchored at both ends.
package struct Glob: Sendable, Hashable {
    package let pattern: String
    package let caseInsensitive: Bool
    private let tokens: [Character]

    package init(_ pattern: String, caseInsensitive: Bool = false) {
        self.pattern = pattern
        self.caseInsensitive = caseInsensitive
        self.tokens = Array(caseInsensitive ? pattern.lowercased() : pattern)
    }

    package var hasWildcards: Bool { tokens.contains("*") || tokens.contains("?") }

    package func matches(_ text: String) -> Bool {
        let chars = Array(caseInsensitive ? text.lowercased() : text)
        // Iterative wildcard matching with single-star backtracking: linear in practice, no regex.
        var p = 0, t = 0
        var star = -1, mark = 0
        while t < chars.count {
            if p < tokens.count, tokens[p] == "?" || (tokens[p] != "*" && tokens[p] == chars[t]) {
                p += 1
                t += 1
            } else if p < tokens.count, tokens[p] == "*" {
                star = p
                mark = t
                p += 1
            } else if star >= 0 {
                p = star + 1
                mark += 1
                t = mark
            } else {
                return false
            }
        }
        while p < tokens.count, tokens[p] == "*" { p += 1 }
        return p == tokens.count
    }
}
