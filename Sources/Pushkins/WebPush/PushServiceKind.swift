import HeraldUpstream

/// The kind of a push service, from its origin: what `herald_upstream_pushback_seconds_total`'s
/// `origin_class` names, so that the metric's cardinality stays bounded and no subscriber's
/// server is named in it (the host is in the log line).
enum PushServiceKind {
    static func of(origin: String) -> String {
        let host = PushbackScope.origin(ofURL: origin).split(separator: "/").last.map(String.init) ?? origin
        let name = host.split(separator: ":").first.map(String.init) ?? host
        for (suffix, kind) in known where name == suffix || name.hasSuffix("." + suffix) { return kind }
        return "other"
    }

    /// The big browsers' services; a UnifiedPush distributor or a self-hosted server is `other`.
    static let known: [(String, String)] = [
        ("push.services.mozilla.com", "mozilla"), ("fcm.googleapis.com", "google"), ("push.apple.com", "apple"),
        ("notify.windows.com", "microsoft"), ("ntfy.sh", "ntfy"),
    ]
}
