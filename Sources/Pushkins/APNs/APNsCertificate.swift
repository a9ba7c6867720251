package import FoundationEssentials
import HeraldCore
import SwiftASN1
import X509

/// An APNs client certificate: its topic (the subject's UID) and expiry.
package struct APNsCertificate: Sendable {
    package var topic: String?
    package var notAfter: Date

    static let uidOID: ASN1ObjectIdentifier = [0, 9, 2342, 19_200_300, 100, 1, 1]

    package struct LoadError: Error, CustomStringConvertible {
        package var description: String
    }

    package static func load(path: String) throws -> APNsCertificate {
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
