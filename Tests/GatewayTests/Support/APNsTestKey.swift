import Crypto
import Foundation
import HeraldTestSupport

/// A token-auth APNs signing key written to `directory/AuthKey.p8`, and the `FakeAPNs` auth that
/// accepts JWTs signed with it (key id `ABC123DEFG`, team `TEAM123456`, as the tests' YAML says).
struct APNsTestKey {
    let auth: FakeAPNs.Auth

    init(directory: String) throws {
        let key = P256.Signing.PrivateKey()
        try key.pemRepresentation.write(toFile: "\(directory)/AuthKey.p8", atomically: true, encoding: .utf8)
        auth = .token(keyId: "ABC123DEFG", teamId: "TEAM123456", publicKey: key.publicKey)
    }
}
