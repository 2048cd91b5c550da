import Foundation

/// Lowercase UUID text, the form APNs uses for the ids it generates.
enum UUIDText {
    static func random() -> String { UUID().uuidString.lowercased() }
}
