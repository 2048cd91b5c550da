import PushTransport
import Testing

@testable import NotificationFilter

/// A payload kept while locked is a `PushLine` (`apns_id`, `body_base64`, `seq`) and reads back as it was kept.
@Suite("Kept-while-locked payloads are PushLines")
struct PendingPayloadTests {
    @Test("a payload with a body: exact bytes, read back unchanged")
    func withBody() {
        let input = PayloadInput(seq: 12, apnsID: "A-1", body: [0xFF, 0x00, 0x7B])
        let text = PayloadInput.pendingText(input)
        #expect(text == #"{"apns_id":"A-1","body_base64":"/wB7","seq":12}"#)
        #expect(PayloadInput.parsePending(text, seq: 12) == input)
    }

    @Test("an apns-id that needs escaping is kept as JSON and read back")
    func escapedID() {
        let input = PayloadInput(seq: 3, apnsID: #"a"b\c"#, body: Array("{}".utf8))
        let text = PayloadInput.pendingText(input)
        #expect(text == #"{"apns_id":"a\"b\\c","body_base64":"e30=","seq":3}"#)
        #expect(PayloadInput.parsePending(text, seq: 3) == input)
    }

    @Test("no apns-id, and no body: the keys are left out; older texts with null or malformed read the same")
    func absentKeys() {
        let noID = PayloadInput(seq: 5, apnsID: nil, body: Array("{}".utf8))
        #expect(PayloadInput.pendingText(noID) == #"{"body_base64":"e30=","seq":5}"#)
        #expect(PayloadInput.parsePending(PayloadInput.pendingText(noID), seq: 5) == noID)
        #expect(PayloadInput.parsePending(#"{"apns_id":null,"body_base64":"e30=","seq":5}"#, seq: 5) == noID)

        let malformed = PayloadInput.parse(
            line: Array(
                #"{"apns_id":"D","body_base64":"!!","device_token":"ab","headers":{},"received_at_ms":1,"seq":9}"#.utf8
            ),
            defaultSeq: 1
        )
        #expect(malformed.body == nil)
        let text = PayloadInput.pendingText(malformed)
        #expect(text == #"{"seq":9}"#)
        let expected = PayloadInput(seq: 9, apnsID: nil, malformed: "kept while locked as not understood")
        #expect(PayloadInput.parsePending(text, seq: 9) == expected)
        #expect(PayloadInput.parsePending(#"{"seq":9,"malformed":true}"#, seq: 9) == expected)
        #expect(PushLine.kind(of: Array(text.utf8)) == .bareBody)
    }
}
