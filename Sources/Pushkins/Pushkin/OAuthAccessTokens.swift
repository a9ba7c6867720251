import Foundation
import HeraldCore
import HeraldUpstream
import NIOCore
import NIOHTTP1

/// An app's OAuth 2.0 access tokens, as an upstream credential: fetched from the token endpoint with
/// the provider's grant, shared by all requests (one fetch at a time: the first caller fetches,
/// the others wait for its answer), reused until a minute before `expires_in` ends, and dropped at
/// once when the upstream refuses it. FCM (a JWT bearer grant) and Huawei's Android API (client
/// credentials) differ only in the form they post.
actor OAuthAccessTokens: UpstreamCredential {
    private let tokenURL: String
    private let form: @Sendable () throws -> String
    private let client: UpstreamHTTPClient
    private let clock: any HeraldClock
    private var current = RefusableValue()
    /// What an operator checks when renewed tokens are refused too (names the key file).
    nonisolated let whatToCheck: String
    private var inFlight: ReadinessGate<String>?

    /// `form` makes the `application/x-www-form-urlencoded` body of each token request.
    init(
        tokenURL: String, client: UpstreamHTTPClient, clock: any HeraldClock, whatToCheck: String,
        form: @escaping @Sendable () throws -> String
    ) {
        self.whatToCheck = whatToCheck
        self.tokenURL = tokenURL
        self.client = client
        self.clock = clock
        self.form = form
    }

    struct FetchError: Error, CustomStringConvertible {
        var description: String
    }

    /// The token to send. A token endpoint that does not answer is temporary: the next attempt
    /// asks again.
    func value() async throws(UpstreamPreparationError) -> String {
        do {
            return try await token()
        } catch {
            throw .temporary(.authorization("\(error)"))
        }
    }

    func refuse(_ value: String) -> CredentialRefusal { current.refuse(value) }

    /// A valid token: the one held, or one fetched (by one caller for all who wait).
    func token() async throws -> String {
        if let held = current.valid(at: clock.date, margin: 60) { return held }
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
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        let response = try await client.send(url: tokenURL, headers: headers, body: ByteBuffer(string: try form()))
        guard response.status == 200, let json = try? JSONParser.parse(response.body.readableBytesView),
            let token = json["access_token"]?.stringValue
        else {
            throw FetchError(description: "token endpoint answered \(response.status)")
        }
        let lifetime = json["expires_in"]?.pythonInt.map(Double.init) ?? 3600
        current.store(token, expires: clock.date.addingTimeInterval(lifetime))
        return token
    }
}

extension String {
    /// Percent-encoded for an `application/x-www-form-urlencoded` value.
    var formEncoded: String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return addingPercentEncoding(withAllowedCharacters: allowed) ?? self
    }
}
