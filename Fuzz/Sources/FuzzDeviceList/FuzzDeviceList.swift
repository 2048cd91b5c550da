// libFuzzer target: the public JSON a sender reads from others — device lists (§11.1, §11.4), device requests
// (§11.8) — and the sender's own pins file (§11.5). Every input is one outcome: accepted, or refused with one of the
// codes the spec gives for that reader; whatever is accepted re-encodes to JSON that parses to the same value; and
// the device list's fast path never reads a value other than JSONDecoder's.
@_spi(Testing) import E2EECore

let listCodes: Set<E2EEError.Code> = [.keyFile, .deviceNotSignedIn, .badListSignature]
let requestCodes: Set<E2EEError.Code> = [.keyFile, .badSignature]

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDeviceList(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    // 0. parse's fast path (DeviceList+Scan.swift) reads what JSONDecoder reads, or gives up.
    if let scanned = DeviceList.scanned(bytes) {
        precondition((try? DeviceList.decoded(bytes)) == scanned, "the device-list scan and JSONDecoder disagree")
    }
    // 1. As a device list: parse + verify, then the pin decisions of a sender that has never seen the user.
    do {
        let list = try DeviceList.parse(bytes)
        precondition((try? DeviceList.parse(list.jsonData())) == list, "a verified list must round-trip")
        var pins = DevicePins()
        precondition((try? pins.check(list, nowMs: 0)) == .firstUse)
        precondition((try? pins.check(list, nowMs: 0)) == .unchanged)
        precondition(list.fingerprint.utf8.count == 24)
    } catch {
        precondition(listCodes.contains(error.code), "device list: unexpected code \(error.code)")
    }
    // 2. As a device request.
    do {
        let request = try DeviceRequest.parse(bytes)
        precondition((try? DeviceRequest.parse(request.jsonData())) == request, "a request must round-trip")
    } catch {
        precondition(requestCodes.contains(error.code), "device request: unexpected code \(error.code)")
    }
    // 3. As a pins file.
    do {
        let pins = try DevicePins.parse(bytes)
        precondition((try? DevicePins.parse(pins.jsonData())) == pins, "a pins file must round-trip")
    } catch {
        precondition(error.code == .keyFile, "pins file: unexpected code \(error.code)")
    }
    return 0
}
