import Foundation
import NIOCore
import NIOPosix
import NIOSSL

/// Why a client's request to a server got no answer, in the three cases a sender must tell apart: nothing reached
/// the server (send again), the server's certificate is not trusted (a configuration error: retrying cannot help),
/// or the request may have reached the server (its outcome is unknown).
///
/// The message is for people: what happened, without error type dumps or source paths.
public enum TransportFailure: Sendable, Hashable {
    /// No connection was made (refused, unreachable, a name that does not resolve, connecting timed out, a TLS
    /// handshake that failed for another reason than trust): nothing was sent.
    case notConnected(String)
    /// The server's certificate does not verify against the trusted certificates, or does not name the host.
    case untrustedCertificate(String)
    /// The connection was made and the request may have reached the server; no answer came.
    case noAnswer(String)

    /// The message for people.
    public var message: String {
        switch self {
        case .notConnected(let message), .untrustedCertificate(let message), .noAnswer(let message): message
        }
    }

    /// Classifies an error of NIO, NIOSSL or the system met while connecting or exchanging; anything it does not know
    /// is ``noAnswer(_:)`` (the request may have been sent).
    public static func classify(_ error: any Error) -> TransportFailure {
        if let failure = Self.connectionFailure(error) { return failure }
        if let failure = Self.tlsFailure(error) { return failure }
        if case ChannelError.connectTimeout = error { return .notConnected("connecting timed out") }
        if let error = error as? IOError {
            return .noAnswer("the connection failed: \(Self.strerror(error.errnoCode))")
        }
        return .noAnswer("the connection failed before an answer came")
    }

    private static func connectionFailure(_ error: any Error) -> TransportFailure? {
        if let error = error as? NIOConnectionError {
            if error.dnsAError != nil || error.dnsAAAAError != nil {
                return .notConnected("the name \(error.host) does not resolve")
            }
            let reasons = error.connectionErrors.map { failure in
                (failure.error as? IOError).map { Self.strerror($0.errnoCode) } ?? "cannot connect"
            }
            return .notConnected(reasons.first ?? "cannot connect")
        }
        if let error = error as? IOError, [ECONNREFUSED, ENETUNREACH, EHOSTUNREACH].contains(error.errnoCode) {
            return .notConnected(Self.strerror(error.errnoCode))
        }
        return nil
    }

    private static func tlsFailure(_ error: any Error) -> TransportFailure? {
        if let error = error as? NIOSSLExtraError, error == .failedToValidateHostname {
            return .untrustedCertificate("the server's certificate does not name the host connected to")
        }
        guard let error = error as? NIOSSLError else { return nil }
        switch error {
        case .handshakeFailed(.sslError(let errors)):
            // NIOSSL exposes BoringSSL's packed error code only inside its description
            // ("error:1000007d:SSL routines:OPENSSL_internal:CERTIFICATE_VERIFY_FAILED at <source path>"), so the
            // reason's name is looked for there; the description itself (with a source path) is never shown.
            if errors.contains(where: { "\($0)".contains("CERTIFICATE_VERIFY_FAILED") }) {
                return .untrustedCertificate(
                    "the server's certificate does not verify against the trusted certificates"
                )
            }
            return .notConnected("the TLS handshake failed")
        case .handshakeFailed:
            return .notConnected("the TLS handshake failed")
        default:
            return .noAnswer("the TLS connection failed")
        }
    }

    private static func strerror(_ code: Int32) -> String {
        switch code {
        case ECONNREFUSED: "connection refused (nothing listens on that port)"
        case ENETUNREACH, EHOSTUNREACH: "the host is unreachable"
        case ECONNRESET: "the connection was reset"
        case EPIPE: "the connection was closed"
        case ETIMEDOUT: "the connection timed out"
        default: String(cString: Foundation.strerror(code))
        }
    }
}
