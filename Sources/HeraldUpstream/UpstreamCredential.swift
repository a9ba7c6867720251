import HeraldCore

/// What an upstream call authenticates with (an APNs provider token, an OAuth access token):
/// `UpstreamCall` asks for the value to send before each attempt and, when the upstream refuses it
/// (`UpstreamVerdict.renewCredential`), for a new one, once per call (docs/architecture.md, "The
/// upstream-call path"). A provider's credential is one conformance; the renewal is not repeated
/// in each pushkin.
package protocol UpstreamCredential: Sendable {
    /// The value to send. `refused` is one the upstream refused: a new value unless another call
    /// has already replaced it. Throws why no request can be built: `temporary` (a token endpoint
    /// that did not answer) or `permanent` (a key that cannot sign).
    func value(replacing refused: String?) async throws(UpstreamPreparationError) -> String
}
