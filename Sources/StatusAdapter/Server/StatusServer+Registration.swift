import Foundation
import HeraldCore
import SwiftProtobuf

/// Registration (16 → 17): a registration is opened, checked and stored, newest version first
/// (docs/status-protocol.md).
extension StatusServer {
    func register(payload: [UInt8], signer: Secp256k1.PublicKey) async -> RegistrationResponse {
        var response = RegistrationResponse()
        response.requestID = Data(Keccak.shake256(payload))
        switch await validateAndStore(payload: payload, signer: signer) {
        case nil: response.success = true
        case let error?: response.error = error
        }
        counters.increment(MetricName.statusRegistrations, [("result", response.success ? "ok" : "\(response.error)")])
        return response
    }

    /// nil on success, else the error to report.
    func validateAndStore(payload: [UInt8], signer: Secp256k1.PublicKey) async -> RegistrationResponse.ErrorType? {
        guard !payload.isEmpty else { return .malformedMessage }
        guard let key = try? identity.sharedX(with: signer), let plain = try? StatusCrypto.open(payload, key: key) else {
            return .malformedMessage
        }
        guard let registration = try? Registration(serializedBytes: plain) else { return .malformedMessage }
        guard registration.version >= 1 else { return .versionMismatch }
        guard InstallationID.isValid(registration.installationID) else { return .malformedMessage }
        let hashedKey = StatusCrypto.hashPublicKey(signer)

        let previous: StoredRegistration?
        do {
            previous = try await store.registration(publicKey: hashedKey, installationId: registration.installationID)
        } catch {
            logger.error("Status store read failed", metadata: ["error": "\(error)"])
            return .internalError
        }
        if let previous, registration.version <= previous.version {
            // A client whose response was lost sends the same version again: the same content is a success.
            guard registration.version == previous.version else { return .versionMismatch }
            if registration.unregister { return previous.registration == nil ? nil : .versionMismatch }
            guard let stored = previous.registration, let storedRegistration = try? Registration(serializedBytes: stored),
                storedRegistration == registration
            else { return .versionMismatch }
            return nil
        }

        if !registration.unregister {
            guard InstallationID.isValid(registration.accessToken) else { return .malformedMessage }
            guard !registration.grant.isEmpty else { return .malformedMessage }
            guard
                StatusCrypto.verifyGrant(
                    [UInt8](registration.grant), client: signer, server: identity.publicKey, accessToken: registration.accessToken)
            else { return .malformedMessage }
            guard !registration.deviceToken.isEmpty else { return .malformedMessage }
            guard registration.tokenType != .unknownTokenType else { return .malformedMessage }
        }

        let row = StoredRegistration(
            publicKey: hashedKey, installationId: registration.installationID, version: registration.version,
            registration: registration.unregister ? nil : plain)
        do {
            // A concurrent writer with a newer version wins; this one is then out of date.
            return try await store.write(row) ? nil : .versionMismatch
        } catch {
            logger.error("Status store write failed", metadata: ["error": "\(error)"])
            return .internalError
        }
    }
}
