/// Where an FCM v1 message goes: `message.token` (a registration token) or `message.fid` (a
/// Firebase installation id), as `projects.messages.send` documents both (docs/compatibility/fcm.md,
/// "Installation ids"). An app whose Android SDK turned installation ids on (one manifest flag,
/// which another library can set by manifest merging) registers its FID as the pushkey.
package struct FCMTarget: Sendable, Equatable {
    package enum Kind: String, Sendable {
        case token, fid
    }

    /// `fcm_target`: how a pushkey's kind is chosen.
    package enum Rule: String, Sendable {
        /// An FID is 22 characters of base64url; a registration token is far longer and has a `:`.
        case auto
        case token, fid
    }

    package let kind: Kind
    package let value: String

    package init(_ pushkey: String, rule: Rule) {
        value = pushkey
        switch rule {
        case .token: kind = .token
        case .fid: kind = .fid
        case .auto: kind = Self.isInstallationId(pushkey) ? .fid : .token
        }
    }

    /// The message's member that names it.
    package var member: String { kind.rawValue }
    /// The other one, which a message must not carry beside it (FCM takes one target).
    var otherMember: String { kind == .token ? Kind.fid.rawValue : Kind.token.rawValue }

    /// 22 characters of the base64url alphabet (the 16 bytes of an FID, unpadded).
    static func isInstallationId(_ pushkey: String) -> Bool {
        pushkey.utf8.count == 22
            && pushkey.utf8.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                    UInt8(ascii: "-"), UInt8(ascii: "_"):
                    return true
                default:
                    return false
                }
            }
    }
}
