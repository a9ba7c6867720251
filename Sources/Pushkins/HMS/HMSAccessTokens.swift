import Foundation
import HeraldCore
import HeraldUpstream
import NIOCore
import NIOHTTP1

/// OAuth 2.0 client-credentials access tokens for Push Kit's Android API: fetched with the app id
/// and secret, shared by all requests (one fetch at a time), reused until a minute before they
/// expire, and replaced when Huawei refuses one (`80200001`, `80200003`). Huawei refuses more than
/// 1 000 tokens in five minutes per app, which reuse keeps far away.
actor HMSAccessTokens: UpstreamCredential {
    private let appId: String
    private let appSecret: String
    private let tokenURL: String
    private let client: UpstreamHTTPClient
    private let clock: any HeraldClock
    private var current: (token: String, expires: Date)?
    private var inFlight: ReadinessGate<String>?

    init(appId: String, appSecret: String, tokenURL: String, client: UpstreamHTTPClient, clock: any HeraldClock) {
        self.appId = appId
        self.appSecret = appSecret
        self.tokenURL = tokenURL
        self.client = client
        self.clock = clock
    }

    struct FetchError: Error, CustomStringConvertible {
        var description: String
    }

    /// The token to send; one Huawei refused is replaced. A token endpoint that does not answer is
    /// temporary: the next attempt asks again.
    func value(replacing refused: String?) async throws(UpstreamPreparationError) -> String {
        do {
            return try await token(replacing: refused)
        } catch {
            throw .temporary(.authorization("\(error)"))
        }
    }

    func token(replacing stale: String?) async throws -> String {
        if let current, current.expires.timeIntervalSince(clock.date) > 60, current.token != stale { return current.token }
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
        let form = "grant_type=client_credentials&client_id=\(appId.formEncoded)&client_secret=\(appSecret.formEncoded)"
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        let response = try await client.send(url: tokenURL, headers: headers, body: ByteBuffer(string: form))
        guard response.status == 200, let json = try? JSONParser.parse(response.body.readableBytesView),
            let token = json["access_token"]?.stringValue
        else {
            throw FetchError(description: "token endpoint answered \(response.status)")
        }
        let lifetime = json["expires_in"]?.pythonInt.map(Double.init) ?? 3600
        current = (token, clock.date.addingTimeInterval(lifetime))
        return token
    }
}
