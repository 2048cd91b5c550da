import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Runs a command to its end and returns its status and output (stdout and stderr together).
///
/// For system tools (`pg_ctl`, `prlimit`, `chown`), not the package's executables (those run as ``ChildProcess``).
/// posix_spawn and waitpid, not Foundation's Process (which ``ChildProcess`` is built on): `pg_ctl start` leaves the
/// server running with the descriptors it inherited, and Process notices an exit only when they are all closed.
/// The wait polls (`WNOHANG`, then a task sleep) instead of blocking in waitpid: `initdb` and `pg_ctl start` take
/// seconds, and a blocked thread is one of Swift concurrency's cooperative threads (two on a 2-core machine) that
/// every other test's async work in the process needs (see ``ChildProcess``).
@discardableResult
func runCommand(_ executable: String, _ arguments: [String]) async throws -> (status: Int32, output: String) {
    let outputPath = NSTemporaryDirectory() + "relay-command-" + UUID().uuidString
    defer { try? FileManager.default.removeItem(atPath: outputPath) }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o666)
    posix_spawn_file_actions_adddup2(&actions, 1, 2)
    let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
    defer { for pointer in argv { free(pointer) } }
    var pid: pid_t = 0
    let spawned = posix_spawn(&pid, executable, &actions, nil, argv, environ)
    guard spawned == 0 else { throw ProcessTestError("cannot run \(executable): errno \(spawned)") }
    var status: Int32 = 0
    while true {
        let waited = waitpid(pid, &status, WNOHANG)
        if waited == pid { break }
        if waited == -1 && errno != EINTR { throw ProcessTestError("waitpid for \(executable): errno \(errno)") }
        try? await Task.sleep(for: .milliseconds(10))
    }
    let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
    // WIFEXITED / WEXITSTATUS, spelled out (the C macros are not imported).
    let exited = status & 0x7f == 0
    return (exited ? (status >> 8) & 0xff : 128 + (status & 0x7f), text)
}

/// A PostgreSQL server of one test's own, which the test stops and starts (the database going away mid-run)
/// without touching the server the other tests share. Made with the binaries and the user that
/// scripts/with-postgres.sh found (E2EE_RELAY_POSTGRES_BINDIR, E2EE_RELAY_POSTGRES_OS_USER).
final class PostgresCluster: Sendable {
    static var bindir: String? {
        ProcessInfo.processInfo.environment["E2EE_RELAY_POSTGRES_BINDIR"].flatMap { $0.isEmpty ? nil : $0 }
    }
    static var skipNote: Comment {
        "E2EE_RELAY_POSTGRES_BINDIR is not set; run ./scripts/with-postgres.sh swift test --filter RelayTests"
    }

    let bindir: String
    /// The command prefix that runs a server binary as the unprivileged user (empty when the tests are not root).
    let runAs: [String]
    let directory: String
    let port: Int

    var dataDirectory: String { self.directory + "/data" }
    var url: String { "postgres://relay@127.0.0.1:\(self.port)/relay" }
    var serverLog: String { (try? String(contentsOfFile: self.directory + "/server.log", encoding: .utf8)) ?? "" }

    private init(bindir: String, runAs: [String], directory: String, port: Int) {
        self.bindir = bindir
        self.runAs = runAs
        self.directory = directory
        self.port = port
    }

    /// initdb, start, and a database `relay`.
    static func make() async throws -> PostgresCluster {
        let bindir = try #require(Self.bindir)
        var runAs: [String] = []
        let user = ProcessInfo.processInfo.environment["E2EE_RELAY_POSTGRES_OS_USER"] ?? ""
        if !user.isEmpty {
            let runuser = ["/usr/sbin/runuser", "/sbin/runuser", "/usr/bin/runuser"].first {
                FileManager.default.isExecutableFile(atPath: $0)
            }
            runAs = [try #require(runuser, "runuser is needed to run PostgreSQL as \(user)"), "-u", user, "--"]
        }
        let directory = NSTemporaryDirectory() + "relay-fault-pg-" + UUID().uuidString
        try FileManager.default.createDirectory(
            atPath: directory,
            withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o755]
        )
        if !user.isEmpty {
            try await runCommand("/bin/chown", [user, directory])
        }
        let cluster = PostgresCluster(bindir: bindir, runAs: runAs, directory: directory, port: try freeLoopbackPort())
        do {
            // --no-sync: the cluster is thrown away, so initdb need not flush it (that flush competes with the
            // shared server's commits for the disk); the server itself runs with fsync on.
            try await cluster.run(
                "initdb",
                [
                    "-D", cluster.dataDirectory, "-U", "relay", "--auth=trust", "-E", "UTF8", "--no-instructions",
                    "--no-sync",
                ]
            )
            try await cluster.start()
            try await cluster.run("createdb", ["-h", "127.0.0.1", "-p", "\(cluster.port)", "-U", "relay", "relay"])
        } catch {
            await cluster.destroy()
            throw error
        }
        return cluster
    }

    /// Runs a server binary (as the server's user) and throws with its output when it fails.
    private func run(_ tool: String, _ arguments: [String]) async throws {
        let command = self.runAs + [self.bindir + "/" + tool] + arguments
        let (status, output) = try await runCommand(command[0], Array(command.dropFirst()))
        guard status == 0 else {
            throw ProcessTestError("\(tool) exited \(status): \(output.suffix(2000))\n\(self.serverLog.suffix(2000))")
        }
    }

    /// Starts the server on its port and waits until it accepts connections.
    func start() async throws {
        try await self.run(
            "pg_ctl",
            [
                "-D", self.dataDirectory, "-l", self.directory + "/server.log", "-w", "-t", "60",
                "-o", "-c listen_addresses=127.0.0.1 -p \(self.port) -k \(self.directory)", "start",
            ]
        )
    }

    /// Stops the server (fast shutdown: sessions are ended, as when a database host goes down).
    func stop() async throws {
        try await self.run("pg_ctl", ["-D", self.dataDirectory, "-m", "fast", "-w", "-t", "60", "stop"])
    }

    /// Stops the server if it runs and removes its files.
    func destroy() async {
        try? await self.stop()
        try? FileManager.default.removeItem(atPath: self.directory)
    }

    /// Runs `body` with a fresh server, destroyed however `body` ends.
    static func with<T>(_ body: (PostgresCluster) async throws -> T) async throws -> T {
        let cluster = try await Self.make()
        return try await withCleanup(cluster, { await $0.destroy() }, body)
    }
}
