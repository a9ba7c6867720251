/// The kind of a push service, from its origin (`scheme://host[:port]`): what
/// `herald_upstream_pushback_seconds_total`'s `origin_class` names, so that the metric's
/// cardinality stays bounded and no subscriber's server is named in it (the host is in the log
/// line).
enum PushServiceKind {
    static func of(origin: String) -> String {
        let authority = origin.split(separator: "/").last ?? Substring(origin)
        let host = authority.split(separator: ":").first.map(String.init) ?? String(authority)
        for (suffix, kind) in known where host == suffix || host.hasSuffix("." + suffix) { return kind }
        return "other"
    }

    /// The big browsers' services; a UnifiedPush distributor or a self-hosted server is `other`.
    static let known: [(String, String)] = [
        ("push.services.mozilla.com", "mozilla"), ("fcm.googleapis.com", "google"), ("push.apple.com", "apple"),
        ("notify.windows.com", "microsoft"), ("ntfy.sh", "ntfy"),
    ]
}
