import Foundation
import HeraldCore
import HeraldUpstream
import NIOCore
import NIOHTTP1

/// OAuth access tokens for FCM v1: fetched with the service account's JWT bearer grant, shared by
/// all requests (one fetch at a time), reused until a minute before they expire, and replaced when
/// FCM says 401.
actor GoogleAccessTokens: UpstreamCredential {
    private let account: GoogleServiceAccount
    private let client: UpstreamHTTPClient
    private var current: (token: String, expires: Date)?
    private var inFlight: ReadinessGate<String>?

    init(account: GoogleServiceAccount, client: UpstreamHTTPClient) {
        self.account = account
        self.client = client
    }

    struct FetchError: Error, CustomStringConvertible {
        var description: String
    }

    /// A valid token; `replacing` marks one FCM refused, so a fresh one is fetched instead.
    func token(replacing stale: String? = nil) async throws -> String {
        if let current, current.expires.timeIntervalSinceNow > 60, current.token != stale { return current.token }
        // One fetch at a time: the first caller fetches, the others wait for its answer.
        if let inFlight { return try await inFlight.wait() }
        let gate = ReadinessGate<String>()
        inFlight = gate
        defer { inFlight = nil }
        do {
            let token = try await fetch()
            gate.open(token)
            return token
        } catch {
            gate.fail(error)
            throw error
        }
    }

    private func fetch() async throws -> String {
        let assertion = try account.assertion()
        let form = "grant_type=" + "urn:ietf:params:oauth:grant-type:jwt-bearer".formEncoded + "&assertion=" + assertion.formEncoded
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        let response = try await client.send(url: account.tokenURI, headers: headers, body: ByteBuffer(string: form))
        guard response.status == 200, let json = try? JSONParser.parse(response.body.readableBytesView),
            let token = json["access_token"]?.stringValue
        else {
            throw FetchError(description: "token endpoint answered \(response.status)")
        }
        let lifetime = json["expires_in"]?.pythonInt.map(Double.init) ?? 3600
        current = (token, Date().addingTimeInterval(lifetime))
        return token
    }
}

extension String {
    var formEncoded: String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return addingPercentEncoding(withAllowedCharacters: allowed) ?? self
    }
}

extension GoogleAccessTokens {
    /// The access token to send; one FCM refused (401) is replaced. A token endpoint that does not
    /// answer is temporary: the next attempt asks again.
    func value(replacing refused: String?) async throws(UpstreamPreparationError) -> String {
        do {
            return try await token(replacing: refused)
        } catch {
            throw .temporary(.authorization("\(error)"))
        }
    }
}
