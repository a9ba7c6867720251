import Foundation
import SwiftASN1
import X509

/// An APNs client certificate: its topic (the subject's UID) and expiry.
public struct APNsCertificate: Sendable {
    public var topic: String?
    public var notAfter: Date

    static let uidOID: ASN1ObjectIdentifier = [0, 9, 2342, 19_200_300, 100, 1, 1]

    public struct LoadError: Error, CustomStringConvertible {
        public var description: String
    }

    public static func load(path: String) throws -> APNsCertificate {
        let pem: String
        do {
            pem = try FileAccess.readString(path)
        } catch {
            throw LoadError(description: "cannot read '\(path)'")
        }
        let documents = (try? PEMDocument.parseMultiple(pemString: pem)) ?? []
        guard let certificateDocument = documents.first(where: { $0.discriminator == "CERTIFICATE" }),
            let certificate = try? Certificate(derEncoded: certificateDocument.derBytes)
        else {
            throw LoadError(description: "'\(path)' holds no PEM certificate")
        }
        guard documents.contains(where: { $0.discriminator.hasSuffix("PRIVATE KEY") }) else {
            throw LoadError(description: "'\(path)' holds no private key (it needs the certificate and its unencrypted key)")
        }
        var topic: String?
        for rdn in certificate.subject {
            for attribute in rdn where attribute.type == uidOID {
                topic = String(describing: attribute.value)
            }
        }
        return APNsCertificate(topic: topic, notAfter: certificate.notValidAfter)
    }
}
