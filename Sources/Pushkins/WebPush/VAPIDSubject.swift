import HeraldCore

/// The VAPID `sub` claim (RFC 8292 §2.1): a `mailto:` address or an `https:` URL. Apple's push
/// service refuses a subject whose domain it cannot resolve with 403 `BadJwtToken`, where other
/// push services accept it (docs/compatibility/webpush.md, "VAPID subject").
package enum VAPIDSubject {
    /// Why no push service can resolve the subject's domain, or nil when it can be public.
    package static func problem(_ contact: String) -> String? {
        var domain: Substring
        if contact.hasPrefix("https://") {
            domain = contact.dropFirst("https://".count).prefix { $0 != "/" && $0 != ":" && $0 != "?" && $0 != "#" }
        } else {
            let address = contact.hasPrefix("mailto:") ? contact.dropFirst("mailto:".count) : Substring(contact)
            guard let at = address.lastIndex(of: "@") else { return "is not an e-mail address or an https URL" }
            domain = address[address.index(after: at)...]
        }
        if domain.hasPrefix("[") || IPNetwork(String(domain)) != nil { return "names an IP address, not a domain" }
        let lowered = domain.lowercased().trimmingSuffix(".")
        if lowered == "localhost" || lowered.hasSuffix(".localhost") { return "names localhost" }
        if !lowered.contains(".") { return "names '\(lowered)', a domain with no dot" }
        for reserved in [".local", ".invalid", ".test", ".internal", ".lan", ".home.arpa"] where lowered.hasSuffix(reserved) {
            return "names a \(reserved) domain, which is never public"
        }
        return nil
    }
}

extension String {
    fileprivate func trimmingSuffix(_ suffix: String) -> String { hasSuffix(suffix) ? String(dropLast(suffix.count)) : self }
}
