import Crypto
import Foundation
import NIOCore
import NIOHPACK
import NIOHTTP1
import NIOHTTP2
import NIOPosix
import NIOSSL
import StatusAdapter
import Synchronization

// The floor rows of bench/run.sh: what a notify must cost at least, measured with nothing of
// Herald in between (docs/operations.md, "Performance"). Each mode runs for `--seconds` and prints
// one line: operations per second, and this process's CPU time per operation in microseconds.
//
//   bench-floor h2 URL --ca FILE [--apns-key FILE --key-id ID --team-id ID] [-H 'name: value']… --body TEXT --concurrency N
//       A bare SwiftNIO HTTP/2 client on one open TLS connection: N streams in flight, each
//       answered stream followed at once by the next, all on the connection's event loop.
//   bench-floor h1 URL [-H 'name: value']… --body TEXT --concurrency N
//       A bare SwiftNIO HTTP/1.1 client: N keep-alive connections, one request at a time each.
//   bench-floor webpush-crypto | vapid | status-crypto
//       One Web Push message's encryption (a fresh P-256 key, ECDH, HKDF, AES-128-GCM); one VAPID
//       ES256 signature; one Status push request's secp256k1 work (the signer recovered from its
//       Keccak-256 digest, the answer's digest signed).

struct Options {
    var mode = ""
    var url = ""
    var ca: String?
    var headers: [(String, String)] = []
    var body = ""
    var concurrency = 64
    var seconds = 10.0
    var apnsKey: String?
    var keyId = ""
    var teamId = ""

    init(_ arguments: [String]) {
        var rest = arguments[...]
        mode = rest.popFirst() ?? ""
        while let argument = rest.popFirst() {
            switch argument {
            case "--ca": ca = rest.popFirst()
            case "-H":
                let header = rest.popFirst() ?? ""
                if let colon = header.firstIndex(of: ":") {
                    headers.append(
                        (String(header[..<colon]), String(header[header.index(after: colon)...]).trimmingCharacters(in: .whitespaces)))
                }
            case "--body": body = rest.popFirst() ?? ""
            case "--concurrency": concurrency = Int(rest.popFirst() ?? "") ?? concurrency
            case "--seconds": seconds = Double(rest.popFirst() ?? "") ?? seconds
            case "--apns-key": apnsKey = rest.popFirst()
            case "--key-id": keyId = rest.popFirst() ?? ""
            case "--team-id": teamId = rest.popFirst() ?? ""
            default: url = argument
            }
        }
    }
}

/// This process's CPU time (user and system), in seconds.
func cpuSeconds() -> Double {
    var usage = rusage()
    getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
}

func report(operations: Int, wall: Double, cpu: Double) {
    print(String(format: "%.0f %.1f", Double(operations) / wall, cpu / Double(max(operations, 1)) * 1e6))
}

/// Counts answered requests from every connection's event loop.
final class Tally: Sendable {
    private let count = Atomic<Int>(0)
    private let stop = Atomic<Bool>(false)
    func add() { count.add(1, ordering: .relaxed) }
    var total: Int { count.load(ordering: .relaxed) }
    var stopped: Bool {
        get { stop.load(ordering: .relaxed) }
        set { stop.store(newValue, ordering: .relaxed) }
    }
}

// MARK: HTTP/2

/// Keeps `concurrency` streams in flight on one HTTP/2 connection, raw frames only: a new stream
/// the moment one ends.
final class H2Driver: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame
    let headers: HPACKHeaders
    let body: ByteBuffer
    let concurrency: Int
    let tally: Tally
    var nextStream = 1

    init(headers: HPACKHeaders, body: ByteBuffer, concurrency: Int, tally: Tally) {
        self.headers = headers
        self.body = body
        self.concurrency = concurrency
        self.tally = tally
    }

    func start(_ context: ChannelHandlerContext) {
        for _ in 0..<concurrency { send(context) }
        context.flush()
    }

    func send(_ context: ChannelHandlerContext) {
        guard !tally.stopped else { return }
        let id = HTTP2StreamID(nextStream)
        nextStream += 2
        context.write(wrapOutboundOut(HTTP2Frame(streamID: id, payload: .headers(.init(headers: headers)))), promise: nil)
        context.write(
            wrapOutboundOut(HTTP2Frame(streamID: id, payload: .data(.init(data: .byteBuffer(body), endStream: true)))), promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        let ended: Bool
        switch frame.payload {
        case .headers(let headers): ended = headers.endStream
        case .data(let data): ended = data.endStream
        default: ended = false
        }
        if ended {
            tally.add()
            send(context)
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) { context.flush() }
}

func apnsJWT(keyFile: String, keyId: String, teamId: String) throws -> String {
    let key = try P256.Signing.PrivateKey(pemRepresentation: String(contentsOfFile: keyFile, encoding: .utf8))
    func b64(_ data: some DataProtocol) -> String {
        Data(data).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
    let header = b64(Array(#"{"alg":"ES256","kid":"\#(keyId)"}"#.utf8))
    let claims = b64(Array(#"{"iss":"\#(teamId)","iat":\#(Int(Date().timeIntervalSince1970))}"#.utf8))
    let signature = try key.signature(for: Array("\(header).\(claims)".utf8))
    return "\(header).\(claims).\(b64(signature.rawRepresentation))"
}

func runH2(_ options: Options) async throws {
    guard let url = URL(string: options.url), let host = url.host, let port = url.port else { throw Failure("bad URL") }
    var tls = TLSConfiguration.makeClientConfiguration()
    if let ca = options.ca { tls.trustRoots = .file(ca) }
    tls.applicationProtocols = ["h2"]
    let context = try NIOSSLContext(configuration: tls)
    var headers = HPACKHeaders()
    headers.add(name: ":method", value: "POST")
    headers.add(name: ":scheme", value: "https")
    headers.add(name: ":authority", value: "\(host):\(port)")
    headers.add(name: ":path", value: url.path)
    for (name, value) in options.headers { headers.add(name: name.lowercased(), value: value) }
    if let key = options.apnsKey {
        headers.add(name: "authorization", value: "bearer \(try apnsJWT(keyFile: key, keyId: options.keyId, teamId: options.teamId))")
    }
    headers.add(name: "content-length", value: String(options.body.utf8.count))
    let tally = Tally()
    let driver = H2Driver(headers: headers, body: ByteBuffer(string: options.body), concurrency: options.concurrency, tally: tally)
    let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton.next())
        .channelOption(.socketOption(.tcp_nodelay), value: 1)
        .channelInitializer { channel in
            channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.addHandler(NIOSSLClientHandler(context: context, serverHostname: "localhost"))
                try channel.pipeline.syncOperations.addHandler(
                    NIOHTTP2Handler(mode: .client, initialSettings: [HTTP2Setting(parameter: .maxConcurrentStreams, value: 1000)]))
                try channel.pipeline.syncOperations.addHandler(driver)
            }
        }
        .connect(host: host, port: port).get()
    try await channel.eventLoop.submit {
        guard let handlerContext = try? channel.pipeline.syncOperations.context(handlerType: H2Driver.self) else { return }
        driver.start(handlerContext)
    }.get()
    try await measure(options, tally: tally) { try await channel.eventLoop.submit { tally.stopped = true }.get() }
    try await channel.close()
}

// MARK: HTTP/1.1

/// One keep-alive connection: the next request as soon as the last answer ended.
final class H1Driver: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundOut = HTTPClientRequestPart
    let head: HTTPRequestHead
    let body: ByteBuffer
    let tally: Tally

    init(head: HTTPRequestHead, body: ByteBuffer, tally: Tally) {
        self.head = head
        self.body = body
        self.tally = tally
    }

    func send(_ context: ChannelHandlerContext) {
        guard !tally.stopped else { return }
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .end = unwrapInboundIn(data) {
            tally.add()
            send(context)
        }
    }
}

func runH1(_ options: Options) async throws {
    guard let url = URL(string: options.url), let host = url.host, let port = url.port else { throw Failure("bad URL") }
    var headers = HTTPHeaders()
    headers.add(name: "Host", value: "\(host):\(port)")
    for (name, value) in options.headers { headers.add(name: name, value: value) }
    headers.add(name: "Content-Length", value: String(options.body.utf8.count))
    let head = HTTPRequestHead(version: .http1_1, method: .POST, uri: url.path, headers: headers)
    let tally = Tally()
    var channels: [any Channel] = []
    for _ in 0..<options.concurrency {
        let driver = H1Driver(head: head, body: ByteBuffer(string: options.body), tally: tally)
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    try channel.pipeline.syncOperations.addHandler(driver)
                }
            }
            .connect(host: host, port: port).get()
        channels.append(channel)
    }
    for channel in channels {
        try await channel.eventLoop.submit {
            guard let context = try? channel.pipeline.syncOperations.context(handlerType: H1Driver.self) else { return }
            (context.handler as? H1Driver)?.send(context)
        }.get()
    }
    try await measure(options, tally: tally) { tally.stopped = true }
    for channel in channels { try? await channel.close() }
}

/// Lets the drivers run for `seconds` and reports what they answered in that time.
func measure(_ options: Options, tally: Tally, stop: () async throws -> Void) async throws {
    // A second to warm up (TLS, HPACK's table, the allocator), not counted.
    try await Task.sleep(for: .seconds(1))
    let (startCount, startCPU, startWall) = (tally.total, cpuSeconds(), Date())
    try await Task.sleep(for: .seconds(options.seconds))
    let (count, cpu, wall) = (tally.total, cpuSeconds(), Date())
    try await stop()
    report(operations: count - startCount, wall: wall.timeIntervalSince(startWall), cpu: cpu - startCPU)
}

// MARK: Cryptography

/// Runs `body` for `seconds` and reports.
func loop(_ seconds: Double, _ body: () throws -> Void) rethrows {
    for _ in 0..<200 { try body() }  // warm up
    let (startCPU, startWall) = (cpuSeconds(), Date())
    var count = 0
    while Date().timeIntervalSince(startWall) < seconds {
        for _ in 0..<100 { try body() }
        count += 100
    }
    report(operations: count, wall: Date().timeIntervalSince(startWall), cpu: cpuSeconds() - startCPU)
}

/// HMAC-SHA-256 as two one-shot hashes (keys of at most 64 bytes).
func hmac(key: [UInt8], _ message: [UInt8]) -> [UInt8] {
    var inner = [UInt8](repeating: 0x36, count: 64)
    var outer = [UInt8](repeating: 0x5C, count: 64)
    for (i, byte) in key.enumerated() {
        inner[i] ^= byte
        outer[i] ^= byte
    }
    return Array(SHA256.hash(data: outer + Array(SHA256.hash(data: inner + message))))
}

func webPushCrypto(_ seconds: Double) throws {
    let subscriber = P256.KeyAgreement.PrivateKey()
    let uaPublic = subscriber.publicKey
    let uaPublicBytes = [UInt8](uaPublic.x963Representation)
    let auth = [UInt8](repeating: 7, count: 16)
    let plaintext = [UInt8](repeating: 0x61, count: 250) + [2]
    var generator = SystemRandomNumberGenerator()
    try loop(seconds) {
        // A fresh sender key from 32 random bytes (without the pairwise test and the compact
        // representation that generating one costs), the ECDH, RFC 8291's five HMACs, the seal.
        var raw = [UInt8](repeating: 0, count: 32)
        for i in 0..<32 { raw[i] = UInt8.random(in: 0...255, using: &generator) }
        let sender = try P256.KeyAgreement.PrivateKey(rawRepresentation: raw)
        let asPublic = [UInt8](sender.publicKey.x963Representation)
        let shared = try sender.sharedSecretFromKeyAgreement(with: uaPublic).withUnsafeBytes { Array($0) }
        let salt = Array(raw[0..<16])
        let ikm = hmac(key: hmac(key: auth, shared), Array("WebPush: info\0".utf8) + uaPublicBytes + asPublic + [1])
        let prk = hmac(key: salt, ikm)
        let cek = SymmetricKey(data: hmac(key: prk, Array("Content-Encoding: aes128gcm\0".utf8) + [1])[0..<16])
        let nonce = try AES.GCM.Nonce(data: hmac(key: prk, Array("Content-Encoding: nonce\0".utf8) + [1])[0..<12])
        _ = try AES.GCM.seal(plaintext, using: cek, nonce: nonce).ciphertext.count
    }
}

func vapid(_ seconds: Double) throws {
    let key = P256.Signing.PrivateKey()
    let input = Array(
        #"eyJ0eXAiOiJKV1QiLCJhbGciOiJFUzI1NiJ9.eyJhdWQiOiJodHRwczovL3B1c2guZXhhbXBsZS5uZXQiLCJleHAiOjE3MDAwMDAwMDAsInN1YiI6Im1haWx0bzpiZW5jaEBleGFtcGxlLm9yZyJ9"#
            .utf8)
    try loop(seconds) { _ = try key.signature(for: input).rawRepresentation }
}

func statusCrypto(_ seconds: Double) throws {
    let client = Secp256k1.PrivateKey()
    let server = Secp256k1.PrivateKey()
    let request = [UInt8](repeating: 0x42, count: 300)
    let signature = try client.signature(forDigest: Keccak.keccak256(request))
    let answer = [UInt8](repeating: 0x43, count: 120)
    try loop(seconds) {
        // The request's signer, from its digest; the answer's digest, signed.
        _ = try Secp256k1.PublicKey.recover(signature: signature, digest: Keccak.keccak256(request))
        _ = try server.signature(forDigest: Keccak.keccak256(answer))
    }
}

struct Failure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

let options = Options(Array(CommandLine.arguments.dropFirst()))
switch options.mode {
case "h2": try await runH2(options)
case "h1": try await runH1(options)
case "webpush-crypto": try webPushCrypto(options.seconds)
case "vapid": try vapid(options.seconds)
case "status-crypto": try statusCrypto(options.seconds)
default:
    FileHandle.standardError.write(Data("usage: bench-floor h2|h1|webpush-crypto|vapid|status-crypto …\n".utf8))
    exit(2)
}
