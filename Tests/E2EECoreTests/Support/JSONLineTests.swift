import E2EECore
import Testing

/// ``JSONLine``: the one writer of the tools' JSON lines, with one behaviour for a value that cannot be encoded.
@Suite("JSONLine: sorted keys, slashes as they are, one failure behaviour")
struct JSONLineTests {
    struct Line: Encodable {
        var path = "a/b"
        var zeta = 1
        var alpha = true
        var missing: String? = nil
    }

    struct Unencodable: Encodable {
        var value = Double.nan
    }

    @Test("keys sorted by their bytes, no escaped slashes, no newline, absent optionals left out")
    func shape() {
        #expect(JSONLine.encode(Line()) == #"{"alpha":true,"path":"a/b","zeta":1}"#)
        #expect(JSONLine.bytes(Line()) == Array(#"{"alpha":true,"path":"a/b","zeta":1}"#.utf8))
    }

    @Test("a value that cannot be encoded is an internal-error line naming its type, never a crash or {}")
    func failure() {
        #expect(
            JSONLine.encode(Unencodable())
                == #"{"error":"internal-error","error_message":"cannot write a Unencodable as JSON (please report it)"}"#
        )
    }
}
