/// Work that a step handed on and that ends later (a delivery record's statement): what it
/// returns instead of waiting for it, so that its caller needs no task of its own to wait in
/// (docs/architecture.md, "Dispatch"). A connection's next answer waits for its previous
/// one's landing; most land at once.
package enum Landing: Sendable {
    /// Nothing is left under way.
    case landed
    /// Under way: the gate opens once it is over.
    case pending(ReadinessGate<Void>)

    /// Returns once it is over (or the caller is cancelled).
    package func wait() async {
        if case .pending(let gate) = self { try? await gate.wait() }
    }
}
