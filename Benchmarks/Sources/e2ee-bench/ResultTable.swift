import Foundation

/// The printed result: sections of rows with ns/op and ratios, then the targets.
struct ResultTable {
    private var lines: [String] = []
    private var targets: [String] = []

    static let header =
        pad("operation", 40) + lpad("ours ns/op", 12) + lpad("floor ns/op", 13) + lpad("ours/floor", 12)
        + lpad("swift-crypto", 14) + lpad("ours/s-c", 10)

    mutating func section(_ title: String) {
        self.lines.append("")
        self.lines.append("## \(title)")
    }

    mutating func row(_ name: String, ours: Double? = nil, floor: Double? = nil, swiftCrypto: Double? = nil) {
        var line = Self.pad(name, 40)
        line += Self.lpad(ours.map(Self.integer) ?? "-", 12)
        line += Self.lpad(floor.map(Self.integer) ?? "-", 13)
        line += Self.lpad(ours.flatMap { o in floor.map { Self.ratio(o / $0) } } ?? "-", 12)
        line += Self.lpad(swiftCrypto.map(Self.integer) ?? "-", 14)
        line += Self.lpad(ours.flatMap { o in swiftCrypto.map { Self.ratio(o / $0) } } ?? "-", 10)
        self.lines.append(line)
    }

    mutating func target(_ name: String, _ ratio: Double, _ limit: Double) {
        let verdict = ratio <= limit ? "MET" : "MISSED"
        self.targets.append("\(Self.pad(name, 44)) \(Self.ratio(ratio))x (limit \(Self.ratio(limit))x)  \(verdict)")
    }

    func print() {
        Swift.print(Self.header)
        for line in self.lines { Swift.print(line) }
        Swift.print("")
        Swift.print("## targets")
        for line in self.targets { Swift.print(line) }
    }

    static func integer(_ value: Double) -> String { String(Int(value.rounded())) }
    static func ratio(_ value: Double) -> String { String(format: "%.2f", value) }
    static func pad(_ s: String, _ width: Int) -> String {
        s.count >= width ? s + " " : s + String(repeating: " ", count: width - s.count)
    }
    static func lpad(_ s: String, _ width: Int) -> String {
        s.count >= width ? " " + s : String(repeating: " ", count: width - s.count) + s
    }
}

/// nproc, the CPU model and the date, for the record.
func machineDescription() -> String {
    let cpuinfo = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)) ?? ""
    let model =
        cpuinfo.split(separator: "\n").first { $0.hasPrefix("model name") }.map {
            $0.split(separator: ":", maxSplits: 1).last.map { $0.trimmingCharacters(in: .whitespaces) } ?? "?"
        } ?? "unknown CPU"
    let cores = ProcessInfo.processInfo.activeProcessorCount
    let load =
        (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?.split(separator: " ").prefix(3)
        .joined(separator: " ") ?? "?"
    return "machine: \(cores) cores, \(model), load average \(load), \(Date())"
}
