import Testing

@testable import StatusAdapter

/// the known-answer primitives, plus Ethereum/NIST values and multi-block inputs checked against
/// independent implementations (pycryptodome's Keccak, Python's hashlib SHAKE-256).
@Suite struct PrimitiveTests {
    @Test(arguments: [
        ("", "c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470"),
        ("abc", "4e03657aea45a94fc7d47ba826c8d667c0d1e6e33a64a036ec44f58fa12d6c45"),
        ("The quick brown fox jumps over the lazy dog", "4d741b6f1eb29cb2a9b9911c82f56fa8d73b04959d3d9d222895df6c0b28aa15"),
        (String(repeating: "a", count: 135), "34367dc248bbd832f4e3e69dfaac2f92638bd0bbd18f2912ba4ef454919cf446"),
        (String(repeating: "a", count: 136), "a6c4d403279fe3e0af03729caada8374b5ca54d8065329a3ebcaeb4b60aa386e"),
        (String(repeating: "a", count: 137), "d869f639c7046b4929fc92a4d988a8b22c55fbadb802c0c66ebcd484f1915f39"),
        (String(repeating: "a", count: 1000), "b6a4ac1f51884d71f30fa397a5e155de3099e11fc0edef5d08b646e621e19de9"),
    ])
    func keccak256(_ input: String, _ expected: String) {
        #expect(Keccak.keccak256(Array(input.utf8)).hex == expected)
    }

    @Test(arguments: [
        (
            "",
            "46b9dd2b0ba88d13233b3feb743eeb243fcd52ea62b81b82b50c27646ed5762fd75dc4ddd8c0f200cb05019d67b592f6fc821c49479ab48640292eacb3b7c4be"
        ),
        (
            "abc",
            "483366601360a8771c6863080cc4114d8db44530f8f1e1ee4f94ea37e78b5739d5a15bef186a5386c75744c0527e1faa9f8726e462a12a4feb06bd8801e751e4"
        ),
        (
            String(repeating: "a", count: 136),
            "8fcc5a08f0a1f6827c9cf64ee8d16e0443106359ca6c8efd230759256f44996a703c7fa566b8308f7050f4c717418c5ef75f512d1ba01f4f1ff5984e1bc89efd"
        ),
        (
            String(repeating: "a", count: 1000),
            "e262331ad290c96ab1c0fa045470244b415ba6696a934d60f2999b8e92aaa24ee8eb039abd7af7d64fde39fa73267b02fdd3a50e1b8651b846a9bb2cc4f344c5"
        ),
    ])
    func shake256(_ input: String, _ expected: String) {
        #expect(Keccak.shake256(Array(input.utf8)).hex == expected)
    }

    /// A sequence without contiguous storage is hashed from a copy, to the same digest.
    @Test func nonContiguousInputsHashAsTheirBytes() {
        let bytes = Array(String(repeating: "a", count: 137).utf8)
        #expect(Keccak.keccak256(AnySequence(bytes)).hex == "d869f639c7046b4929fc92a4d988a8b22c55fbadb802c0c66ebcd484f1915f39")
        #expect(Keccak.shake256(AnySequence(Array("abc".utf8))).hex == Keccak.shake256(Array("abc".utf8)).hex)
    }

    @Test func longerShakeOutputsSqueezeMoreBlocks() {
        let long = Keccak.shake256([], outputLength: 300)
        #expect(long.count == 300)
        #expect(Array(long.prefix(64)).hex == Keccak.shake256([]).hex)
        // Python's hashlib.shake_256(b"").hexdigest(300)
        #expect(
            long.hex
                == "46b9dd2b0ba88d13233b3feb743eeb243fcd52ea62b81b82b50c27646ed5762fd75dc4ddd8c0f200cb05019d67b592f6fc821c49479ab48640292eacb3b7c4be"
                + "141e96616fb13957692cc7edd0b45ae3dc07223c8e92937bef84bc0eab862853349ec75546f58fb7c2775c38462c5010d846c185c15111e595522a6bcd16cf86"
                + "f3d122109e3b1fdd943b6aec468a2d621a7c06c6a957c62b54dafc3be87567d677231395f6147293b68ceab7a9e0c58d864e8efde4e1b9a46cbe854713672f5c"
                + "aaae314ed9083dab4b099f8e300f01b8650f1f4b1d8fcf3f3cb53fb8e9eb2ea203bdc970f50ae55428a91f7f53ac266b28419c3778a15fd248d339ede785fb7f"
                + "5a1aaa96d313eacc890936c173cdcd0fab882c45755feb3aed96d477ff96390bf9a66d1368b208e21f7c10d0")
    }

    @Test func keysFromTheVectors() {
        #expect(V.bob.publicKey.compressed.hex == V.bobCompressed)
        #expect(V.bob.publicKey.uncompressed.hex == V.bobUncompressed)
        #expect(V.server.publicKey.compressed.hex == V.serverCompressed)
        #expect(V.server.publicKey.uncompressed.hex == V.serverUncompressed)
        #expect(V.alice.publicKey.compressed.hex == V.aliceCompressed)
        #expect("0x" + V.alice.publicKey.uncompressed.hex == V.aliceId)
        #expect(V.ephemeral.publicKey.compressed.hex == V.ephemeralCompressed)
        #expect(V.blocked.publicKey.uncompressed.hex == V.blockedUncompressed)
        #expect((try? Secp256k1.PublicKey(bytes: V.h(V.bobCompressed))) == V.bob.publicKey)
    }

    @Test func hashPublicKeyAndRawXECDH() throws {
        #expect(StatusCrypto.hashPublicKey(V.bob.publicKey).hex == V.hashBob)
        #expect(try V.bob.sharedX(with: V.server.publicKey).hex == V.ecdhBobServer)
        #expect(try V.server.sharedX(with: V.bob.publicKey).hex == V.ecdhBobServer)
        #expect(try V.bob.sharedX(with: V.alice.publicKey).hex == V.ecdhBobAlice)
        #expect(try V.alice.sharedX(with: V.bob.publicKey).hex == V.ecdhBobAlice)
    }

    @Test func grantIsDeterministicAndRecoversTheClient() throws {
        let digest = StatusCrypto.grantDigest(client: V.bob.publicKey, server: V.server.publicKey, accessToken: V.accessToken)
        #expect(digest.hex == V.grantDigest)
        #expect(try V.bob.signature(forDigest: digest).hex == V.grant)
        #expect(StatusCrypto.verifyGrant(V.h(V.grant), client: V.bob.publicKey, server: V.server.publicKey, accessToken: V.accessToken))
        #expect(!StatusCrypto.verifyGrant(V.h(V.grant), client: V.bob.publicKey, server: V.alice.publicKey, accessToken: V.accessToken))
        #expect(!StatusCrypto.verifyGrant(V.h(V.grant), client: V.bob.publicKey, server: V.server.publicKey, accessToken: "other"))
    }

    @Test func allowedKeyEntrySealsAndOpens() throws {
        let key = try V.bob.sharedX(with: V.alice.publicKey)
        let entry = try StatusCrypto.seal(Array(V.accessToken.utf8), key: key, nonce: Array(0..<12))
        #expect(entry.hex == V.allowedEntry)
        let opened = try StatusCrypto.open(entry, key: try V.alice.sharedX(with: V.bob.publicKey))
        #expect(String(decoding: opened, as: UTF8.self) == V.accessToken)
    }

    @Test func sealErrors() throws {
        #expect(throws: StatusCrypto.SealError.tooShort) {
            try StatusCrypto.open(Array("too short".utf8), key: [UInt8](repeating: 1, count: 32))
        }
        #expect(throws: StatusCrypto.SealError.authenticationFailed) {
            try StatusCrypto.open(V.h(V.allowedEntry), key: [UInt8](repeating: 1, count: 32))
        }
    }

    @Test func signaturesRejectBadInput() {
        #expect(throws: Secp256k1.Error.invalidSignature) {
            try Secp256k1.PublicKey.recover(signature: [1, 2, 3], digest: [UInt8](repeating: 0, count: 32))
        }
        var grant = V.h(V.grant)
        grant[64] = 4
        #expect(throws: Secp256k1.Error.invalidSignature) { try Secp256k1.PublicKey.recover(signature: grant, digest: V.h(V.grantDigest)) }
        #expect(throws: Secp256k1.Error.invalidDigest) { try Secp256k1.PublicKey.recover(signature: V.h(V.grant), digest: [1]) }
        #expect(throws: Secp256k1.Error.invalidPrivateKey) { try Secp256k1.PrivateKey(rawRepresentation: [UInt8](repeating: 0, count: 32)) }
        #expect(throws: Secp256k1.Error.invalidPublicKey) { try Secp256k1.PublicKey(bytes: [2] + [UInt8](repeating: 0xFF, count: 32)) }
    }

    @Test(arguments: [
        ("c6ae4fde-bb65-11ea-b3de-0242ac130004", true), ("urn:uuid:c6ae4fde-bb65-11ea-b3de-0242ac130004", true),
        ("{c6ae4fde-bb65-11ea-b3de-0242ac130004}", true), ("c6ae4fdebb6511eab3de0242ac130004", true), ("abc", false), ("", false),
        ("c6ae4fde-bb65-11ea-b3de-0242ac13000g", false), ("c6ae4fdebb65-11ea-b3de-0242ac130004-", false),
    ])
    func installationIdForms(_ text: String, _ valid: Bool) {
        #expect(InstallationID.isValid(text) == valid)
    }
}
