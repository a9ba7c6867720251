import Testing

@testable import HeraldUpstream

/// `DeliveryNotes`: each device's upstream calls add up by pushkey, the first device's in place.
@Suite struct DeliveryNotesTests {
    @Test func eachDevicesCallsAddUpAndKeepTheLastProviderId() {
        let notes = DeliveryNotes()
        let first = DeliveryNotes.Sink(notes, pushkey: "device-a")
        let second = DeliveryNotes.Sink(notes, pushkey: "device-b")
        first.add(attempts: 1, providerId: nil)  // an OAuth token's call, say
        second.add(attempts: 2, providerId: "id-b")
        first.add(attempts: 3, providerId: "id-a")
        second.add(attempts: 1, providerId: nil)
        #expect(notes.note(for: "device-a") == DeliveryNote(attempts: 4, providerId: "id-a"))
        #expect(notes.note(for: "device-b") == DeliveryNote(attempts: 3, providerId: "id-b"))
        #expect(notes.note(for: "device-c") == DeliveryNote())
    }
}
