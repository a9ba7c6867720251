import Crypto
package import Foundation
import SwiftASN1
import X509

/// A private certificate authority for tests: it issues the fake servers' certificates (for
/// `localhost` and 127.0.0.1) and APNs-style client certificates, and writes PEM files that
/// Herald's `tls_ca_file` and `certfile` keys can point at.
package struct TestPKI: Sendable {
    package let directory: String
    package let caFile: String
    private let caKey: P256.Signing.PrivateKey
    private let caName: DistinguishedName

    package init(directory: String) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        self.directory = directory
        caKey = P256.Signing.PrivateKey()
        caName = try DistinguishedName { CommonName("Herald Test CA") }
        let now = Date()
        let ca = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(caKey.publicKey), notValidBefore: now - 3600,
            notValidAfter: now + 365 * 86_400, issuer: caName, subject: caName, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
            }, issuerPrivateKey: .init(caKey))
        caFile = directory + "/ca.pem"
        try ca.serializeAsPEM().pemString.write(toFile: caFile, atomically: true, encoding: .utf8)
    }

    /// A server certificate for localhost and 127.0.0.1: (certificate PEM path, key PEM path).
    package func issueServerCertificate(name: String = "server") throws -> (certificate: String, key: String) {
        let key = P256.Signing.PrivateKey()
        let now = Date()
        let certificate = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(key.publicKey), notValidBefore: now - 3600,
            notValidAfter: now + 30 * 86_400, issuer: caName, subject: try DistinguishedName { CommonName("localhost") },
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                SubjectAlternativeNames([.dnsName("localhost"), .ipAddress(ASN1OctetString(contentBytes: [127, 0, 0, 1]))])
                try ExtendedKeyUsage([.serverAuth])
            }, issuerPrivateKey: .init(caKey))
        let certificateFile = "\(directory)/\(name).pem"
        let keyFile = "\(directory)/\(name)-key.pem"
        try certificate.serializeAsPEM().pemString.write(toFile: certificateFile, atomically: true, encoding: .utf8)
        try key.pemRepresentation.write(toFile: keyFile, atomically: true, encoding: .utf8)
        return (certificateFile, keyFile)
    }

    /// An APNs-style client certificate whose subject carries `UID=<topic>`, written with its
    /// key in one PEM file (as Sygnal's `certfile` expects). Returns the path.
    package func issueClientCertificate(topic: String, validFor: TimeInterval = 90 * 86_400, name: String = "client") throws -> String {
        let key = P256.Signing.PrivateKey()
        let now = Date()
        let uid: ASN1ObjectIdentifier = [0, 9, 2342, 19_200_300, 100, 1, 1]
        let subject = DistinguishedName([
            RelativeDistinguishedName(.init(type: uid, utf8String: topic)),
            RelativeDistinguishedName(.init(type: .RDNAttributeType.commonName, utf8String: "Apple Push Services: \(topic)")),
        ])
        let certificate = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(key.publicKey), notValidBefore: now - 3600,
            notValidAfter: now + validFor, issuer: caName, subject: subject, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions { try ExtendedKeyUsage([.clientAuth]) }, issuerPrivateKey: .init(caKey))
        let file = "\(directory)/\(name).pem"
        try (certificate.serializeAsPEM().pemString + "\n" + key.pemRepresentation + "\n").write(
            toFile: file, atomically: true, encoding: .utf8)
        return file
    }
}
