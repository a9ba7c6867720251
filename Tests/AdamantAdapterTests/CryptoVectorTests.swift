import Foundation
import HeraldCore
import HeraldUpstream
import Pushkins
import Testing

@testable import AdamantAdapter

/// Every known-answer vector of docs/adamant.md, "Crypto": keys from passphrases, addresses, the
/// Ed25519 → X25519 conversion, and NaCl boxes both ways.
@Suite struct CryptoVectorTests {
    static let user = "wrap track hamster grocery casual talk theory half artist toast art essence"
    static let ans = "abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about"
    static let token = "3f6c2a9e0b7d4e1f8a5c6b2d9e0f1a3b4c5d6e7f8091a2b3c4d5e6f708192a3b"

    func bytes(_ hex: String) -> [UInt8] { [UInt8](hexString: hex) ?? [] }

    @Test func keysAndAddressesFromPassphrases() throws {
        let user = try AdamantKeys(passphrase: Self.user)
        #expect(Hex.encode(user.publicKey) == "7db9b51bc75fed7b8e631e2efaad38305b12c6b3d3d9f6af3498fdcb7b35c284")
        #expect(
            Hex.encode(user.privateKey)
                == "24a26e6cd6283528f6e2637dcf834434176cf8696647bd4aa6223f349882dc96"
                + "7db9b51bc75fed7b8e631e2efaad38305b12c6b3d3d9f6af3498fdcb7b35c284")
        #expect(user.address == "U6687642817984673870")
        let ans = try AdamantKeys(passphrase: Self.ans)
        #expect(Hex.encode(ans.publicKey) == "58032e75cd5ee0bbcacbed1e38c3da4bf0f162aba2d7513d2d2fba2184327bd3")
        #expect(ans.address == "U5450667915320866213")
        #expect(try AdamantKeys(privateKeyHex: Hex.encode(ans.privateKey)) == ans)
        #expect(try AdamantKeys(privateKeyHex: "62a772f85e4be6226108b56c0b1cf935c2490e434adec864fe47b189f1ed517d") == ans)
        #expect(throws: AdamantKeys.Failure.badPrivateKey) { try AdamantKeys(privateKeyHex: "abcd") }
    }

    @Test func theProductionServiceKeyGivesItsPublishedAddress() {
        #expect(
            AdamantKeys.address(publicKey: bytes("188b24bd116a556ac8ba905bbbdaa16e237dfb14269f5a4f9a26be77537d977c"))
                == "U10629337621822775991")
        #expect(AdamantKeys.isAddress("U10629337621822775991"))
        #expect(!AdamantKeys.isAddress("U12x45678"))
    }

    @Test func ed25519KeysConvertToX25519() throws {
        let user = try AdamantKeys(passphrase: Self.user)
        #expect(
            Hex.encode(try AdamantBox.curvePublic(user.publicKey)) == "5638189389a78f03ddf8b20864d34b1488779e306b5ee74a5fe1cf3fc6c43711")
        #expect(
            Hex.encode(try AdamantBox.curveSecret(user.privateKey)) == "381e2265e5da0a07934432a7d095ee6dc32b5d75a032833b62eb3f03b191ab57")
        let ans = try AdamantKeys(passphrase: Self.ans)
        #expect(Hex.encode(try AdamantBox.curvePublic(ans.publicKey)) == "b6947a8dd58aab6525504038ce61adb9f25ab5daffa6075366490e3065cdc770")
        #expect(
            Hex.encode(try AdamantBox.curveSecret(ans.privateKey)) == "7008f213b8c85e95efb9cf8a3f5a47c38cced1a42c9853f485363e31ba71ae4b")
    }

    static let addMessage =
        "293f021b9902f8e3f3af3baf469f6a1927e13d02b6bd1fe9e0fb7e3bb5ef5cc5cacc1706a5a3de5ab6776abbfd45396f"
        + "aca3ba97e745fa588b213f559bb8e8f38a7a9ad8cc1adb8963cf1c958588664938401ecba482f9e770d50d51ddcc4b37"
        + "4bf58c04678ca5f3d52b16ce9eaee1abbde0bac51ae6daca48d7f4c800"
    static let removeMessage =
        "a16a7ada96d2c96cb72db6e022fcf7392b6ddf83dac36b13213a7fe6c97b5a7eb01c00f2678f5084b8ed669d2ee5794e"
        + "dbcf7d20c22ffbe5ca91e886696694a0fb72adaf093fbc98ffb47c2097427701346377c2aeb3b77fb7d670eebea13370"
        + "e13dad5619b5e7e7cc3ed99cf6e871e1fa078f58a2ef1304c26c27128523eec9"

    @Test func signalsSealAndOpenByteForByte() throws {
        let user = try AdamantKeys(passphrase: Self.user)
        let ans = try AdamantKeys(passphrase: Self.ans)
        for (action, nonce, message) in [
            ("add", "000102030405060708090a0b0c0d0e0f1011121314151617", Self.addMessage),
            ("remove", "404142434445464748494a4b4c4d4e4f5051525354555657", Self.removeMessage),
        ] {
            let plaintext = #"{"token":"\#(Self.token)","provider":"apns","action":"\#(action)"}"#
            #expect(
                Hex.encode(
                    try AdamantBox.seal(
                        Array(plaintext.utf8), nonce: bytes(nonce), senderPrivate: user.privateKey, recipientPublic: ans.publicKey))
                    == message)
            let opened = try AdamantBox.open(
                bytes(message), nonce: bytes(nonce), senderPublic: user.publicKey, recipientPrivate: ans.privateKey)
            #expect(String(decoding: opened, as: UTF8.self) == plaintext)
        }
    }

    @Test func aChatFromTheServiceToTheUserAndANSsOwnDecryptTest() throws {
        let user = try AdamantKeys(passphrase: Self.user)
        let ans = try AdamantKeys(passphrase: Self.ans)
        let nonce = bytes("a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7")
        let sealed = try AdamantBox.seal(
            Array("Hello from Herald".utf8), nonce: nonce, senderPrivate: ans.privateKey, recipientPublic: user.publicKey)
        #expect(Hex.encode(sealed) == "21f0fb1bbe1df42a3d397d2b6650542eed856394be8df9261545eec09eff17ce39")
        let common = try AdamantBox.open(
            bytes("09af1ce7e5ed484ddca3c6d1410cbf4f793ea19210e7"), nonce: bytes("31caaee2d35dcbd8b614e9d6bf6095393cb5baed259e7e37"),
            senderPublic: bytes("9f895a201fd92cc60ef02d2117d53f00dc2981903cb64b2f214777269b882209"),
            recipientPrivate: bytes(
                "9001490b166816af75a15a3e2b0174bfe3be3dfaa63147b4f780ed3ab90ffeab8007a01493bb4b21ec67265769898eb19514d9427bd7b701f96bc9880a6e209f"
            ))
        #expect(String(decoding: common, as: UTF8.self) == "common")
        #expect(throws: AdamantBox.Failure.authenticationFailed) {
            try AdamantBox.open(sealed, nonce: nonce, senderPublic: ans.publicKey, recipientPrivate: ans.privateKey)
        }
    }

    func signal(_ user: AdamantKeys, _ service: AdamantKeys, _ json: String, chatType: Int = 3, senderId: String? = nil) throws
        -> AdamantTransaction
    {
        let nonce = AdamantBox.randomNonce()
        let sealed = try AdamantBox.seal(Array(json.utf8), nonce: nonce, senderPrivate: user.privateKey, recipientPublic: service.publicKey)
        return AdamantTransaction(
            id: "1", height: 5, type: 8, timestamp: 1, senderId: senderId ?? user.address, senderPublicKey: Hex.encode(user.publicKey),
            recipientId: service.address, chat: .init(type: chatType, message: Hex.encode(sealed), ownMessage: Hex.encode(nonce)))
    }

    @Test func signalsAreValidatedBeforeTheyChangeAnything() throws {
        let user = try AdamantKeys(passphrase: Self.user)
        let ans = try AdamantKeys(passphrase: Self.ans)
        #expect(
            try SignalDecoder.decode(try signal(user, ans, #"{"token":"ABCDEF01","provider":"apns-sandbox","action":"Add"}"#), service: ans)
                == DeviceChange(address: user.address, token: "abcdef01", action: .add(.apnsSandbox)))
        #expect(
            try SignalDecoder.decode(try signal(user, ans, #"{"token":"ab","provider":"apns","action":"remove"}"#), service: ans)
                == DeviceChange(address: user.address, token: "ab", action: .remove))
        #expect(throws: SignalDecoder.Rejection.unknownProvider("fcm")) {
            try SignalDecoder.decode(try signal(user, ans, #"{"token":"ab","provider":"fcm","action":"add"}"#), service: ans)
        }
        #expect(throws: SignalDecoder.Rejection.unknownAction("(none)")) {
            try SignalDecoder.decode(try signal(user, ans, #"{"token":"ab","provider":"apns"}"#), service: ans)
        }
        #expect(throws: SignalDecoder.Rejection.badToken) {
            try SignalDecoder.decode(try signal(user, ans, #"{"token":"not hex","provider":"apns","action":"add"}"#), service: ans)
        }
        #expect(throws: SignalDecoder.Rejection.notJSON) { try SignalDecoder.decode(try signal(user, ans, "[1]"), service: ans) }
        #expect(throws: SignalDecoder.Rejection.notASignal) {
            try SignalDecoder.decode(try signal(user, ans, "{}", chatType: 1), service: ans)
        }
        #expect(throws: SignalDecoder.Rejection.senderMismatch) {
            try SignalDecoder.decode(try signal(user, ans, "{}", senderId: "U1234567"), service: ans)
        }
        var garbled = try signal(user, ans, #"{"token":"ab","provider":"apns","action":"add"}"#)
        let original = garbled.chat?.message ?? ""
        // A different first byte (the random ciphertext may itself start with 00).
        garbled.chat?.message = (original.hasPrefix("00") ? "ff" : "00") + original.dropFirst(2)
        #expect(throws: SignalDecoder.Rejection.undecryptable) { try SignalDecoder.decode(garbled, service: ans) }
    }

    @Test func thePushPayloadIsWhatTheAppReads() {
        let transaction = AdamantTransaction(
            id: "1000000000000000001", height: 9, type: 8, timestamp: 1, senderId: "U1", senderPublicKey: "",
            recipientId: "U6687642817984673870")
        let payload = AdamantPusher.payload(
            transaction, recipient: "U6687642817984673870",
            config: .init(locKey: "NotificationsService.NewMessage.BodySingle", titleLocKey: nil, sound: "notification.mp3"))
        #expect(
            JSONValue.object(payload)
                == [
                    "aps": [
                        "alert": ["loc-key": "NotificationsService.NewMessage.BodySingle"], "badge": 1, "sound": "notification.mp3",
                        "mutable-content": 1,
                    ],
                    "txn-id": "1000000000000000001", "push-recipient": "U6687642817984673870",
                ])
    }
}
