package import Crypto
import FoundationEssentials
import HeraldCore
package import Logging

/// The application server's VAPID key (RFC 8292): loaded from `vapid_private_key`, or created
/// there on first start when the app allows it.
package enum VAPIDKey {
    package enum LoadError: Error, CustomStringConvertible {
        case missing(String)
        case unreadable(String, String)
        case invalid(String)

        package var description: String {
            switch self {
            case .missing(let path): return "file '\(path)' does not exist"
            case .unreadable(let path, let reason): return "cannot read '\(path)': \(reason)"
            case .invalid(let path): return "'\(path)' is not a P-256 private key (PEM, or base64url of the 32-byte scalar)"
            }
        }
    }

    /// Loads a PEM (PKCS#8 or SEC1, as `vapid --gen` writes) or raw base64url key. When the file
    /// does not exist and `createIfMissing` is set, a new key is written there (mode 0600).
    /// With `readOnly`, a missing key that would be created is made in memory only.
    package static func load(path: String, createIfMissing: Bool, readOnly: Bool = false, logger: Logger? = nil) throws(LoadError)
        -> P256.Signing.PrivateKey
    {
        if !FileAccess.exists(path) {
            guard createIfMissing else { throw .missing(path) }
            let key = P256.Signing.PrivateKey()
            if readOnly { return key }
            do {
                try FileAccess.writeSecret(key.pemRepresentation, to: path)
            } catch {
                throw .unreadable(path, "could not create it: \(error.localizedDescription)")
            }
            logger?.notice(
                "Created a new VAPID key",
                metadata: ["path": "\(path)", "application_server_key": "\(applicationServerKey(key))"])
            return key
        }
        let text: String
        do {
            text = try FileAccess.readString(path)
        } catch {
            throw .unreadable(path, error.localizedDescription)
        }
        if let key = try? P256.Signing.PrivateKey(pemRepresentation: text) { return key }
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        if let raw = Base64URL.decode(trimmed), raw.count == 32, let key = try? P256.Signing.PrivateKey(rawRepresentation: raw) {
            return key
        }
        if let der = Base64URL.decode(trimmed), let key = try? P256.Signing.PrivateKey(derRepresentation: der) {
            return key
        }
        throw .invalid(path)
    }

    /// The public key as browsers take it for `applicationServerKey`: base64url of the
    /// uncompressed point.
    package static func applicationServerKey(_ key: P256.Signing.PrivateKey) -> String {
        Base64URL.encode(key.publicKey.x963Representation)
    }
}
