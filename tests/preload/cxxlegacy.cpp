// SPDX-License-Identifier: BSD-3-Clause
// cxxlegacy.cpp - a C++ program written for one host: globals of the
// standard library's own types (std::mutex, std::timed_mutex,
// std::shared_mutex, std::shared_timed_mutex, std::condition_variable) in
// a namespace, an anonymous namespace, a file-static and a class's static
// member.  No distlock anywhere.  tests/preload/test_cxx.sh builds it
// with g++ and runs several copies at once with and without the
// interposer, the globals mapped by their C++ names (app::counter_mutex)
// or by their mangled symbols.
//
//   cxxlegacy count WHICH FILE N T   T threads x N increments of a counter in
//                                    FILE (read, sleep, write) under the lock
//                                    WHICH: counter (std::mutex), timed
//                                    (std::timed_mutex), shared (std::shared_mutex,
//                                    exclusive), anon, static, member
//   cxxlegacy record FILE N W R      W writers x N updates of a two-field record
//                                    under std::shared_mutex (unique_lock), R
//                                    readers checking it under shared_lock;
//                                    prints "torn=K"
//   cxxlegacy hold WHICH MS          holds the lock WHICH (timed, or stimed:
//                                    std::shared_timed_mutex, exclusively),
//                                    prints "held", sleeps MS, unlocks
//   cxxlegacy tryfor WHICH CLOCK MS  try_lock_for (steady) or try_lock_until
//                                    (system_clock::now() + MS) on WHICH (timed,
//                                    stimed, stimed-shared); prints "got" or
//                                    "timeout", the ms waited on that clock, and
//                                    "early" if it gave up before MS
//   cxxlegacy wait CLOCK MS FLAG     waits on app::queue_cv under app::queue_mutex
//                                    until FLAG exists (checked under the mutex)
//                                    or MS pass: wait_for (steady) or wait_until
//                                    (system_clock); prints "woken" or "timeout",
//                                    the ms waited, "early" if it timed out first
//   cxxlegacy notify FLAG            under app::queue_mutex: creates FLAG, notify_all
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

namespace app {
std::mutex counter_mutex;
std::timed_mutex slow_mutex;
std::shared_mutex table_mutex;
std::shared_timed_mutex stable_mutex;
std::mutex queue_mutex;
std::condition_variable queue_cv;
}  // namespace app

namespace {
std::mutex anon_mutex;
}

static std::mutex file_mutex;

struct Ledger {
    static std::mutex mu;
};
std::mutex Ledger::mu;

namespace {

int fd = -1;

long read_at(off_t off)
{
    char buf[32] = {};
    ssize_t n = pread(fd, buf, sizeof buf - 1, off);
    return n > 0 ? std::strtol(buf, nullptr, 10) : 0;
}

void write_at(off_t off, long v)
{
    char buf[32];
    int len = std::snprintf(buf, sizeof buf, "%020ld\n", v);
    if (pwrite(fd, buf, static_cast<size_t>(len), off) != len)
        std::perror("pwrite");
}

void bump()
{
    long v = read_at(0);
    usleep(300);
    write_at(0, v + 1);
}

void open_file(const char *path)
{
    fd = open(path, O_RDWR | O_CREAT, 0644);
    if (fd < 0) {
        std::perror(path);
        std::exit(2);
    }
}

template <class M>
void count_under(M &m, long n)
{
    for (long i = 0; i < n; i++) {
        std::lock_guard<M> g(m);
        bump();
    }
}

int run_count(const std::string &which, const char *path, long n, int t)
{
    open_file(path);
    std::vector<std::thread> th;
    for (int i = 0; i < t; i++)
        th.emplace_back([&] {
            if (which == "counter")
                count_under(app::counter_mutex, n);
            else if (which == "timed")
                count_under(app::slow_mutex, n);
            else if (which == "shared")
                count_under(app::table_mutex, n);
            else if (which == "anon")
                count_under(anon_mutex, n);
            else if (which == "static")
                count_under(file_mutex, n);
            else if (which == "member")
                count_under(Ledger::mu, n);
            else
                std::exit(2);
        });
    for (auto &x : th)
        x.join();
    return 0;
}

int run_record(const char *path, long n, int w, int r)
{
    open_file(path);
    std::vector<std::thread> th;
    long torn = 0;
    std::mutex tm;
    for (int i = 0; i < w; i++)
        th.emplace_back([&] {
            for (long k = 0; k < n; k++) {
                std::unique_lock<std::shared_mutex> g(app::table_mutex);
                long v = read_at(0);
                write_at(0, v + 1);
                usleep(300);
                write_at(32, v + 1);
            }
        });
    for (int i = 0; i < r; i++)
        th.emplace_back([&] {
            for (long k = 0; k < n; k++) {
                long a, b;
                {
                    std::shared_lock<std::shared_mutex> g(app::table_mutex);
                    a = read_at(0);
                    usleep(200);
                    b = read_at(32);
                }
                if (a != b) {
                    std::lock_guard<std::mutex> g(tm);
                    torn++;
                }
            }
        });
    for (auto &x : th)
        x.join();
    std::printf("torn=%ld\n", torn);
    return 0;
}

using steady = std::chrono::steady_clock;
using sys = std::chrono::system_clock;

long ms_since(steady::time_point t0)
{
    return static_cast<long>(
        std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - t0).count());
}

long ms_since(sys::time_point t0)
{
    return static_cast<long>(
        std::chrono::duration_cast<std::chrono::milliseconds>(sys::now() - t0).count());
}

int run_hold(const std::string &which, long ms)
{
    if (which == "timed")
        app::slow_mutex.lock();
    else
        app::stable_mutex.lock();
    std::printf("held\n");
    std::fflush(stdout);
    usleep(static_cast<useconds_t>(ms * 1000));
    if (which == "timed")
        app::slow_mutex.unlock();
    else
        app::stable_mutex.unlock();
    return 0;
}

// try_lock_for / try_lock_until on WHICH; true if taken (and then let go).
template <class Clock>
bool try_on(const std::string &which, typename Clock::time_point until)
{
    bool got;
    if (which == "timed") {
        got = app::slow_mutex.try_lock_until(until);
        if (got)
            app::slow_mutex.unlock();
    } else if (which == "stimed") {
        got = app::stable_mutex.try_lock_until(until);
        if (got)
            app::stable_mutex.unlock();
    } else {
        got = app::stable_mutex.try_lock_shared_until(until);
        if (got)
            app::stable_mutex.unlock_shared();
    }
    return got;
}

int run_tryfor(const std::string &which, const std::string &clock, long ms)
{
    bool got;
    long waited;
    auto d = std::chrono::milliseconds(ms);
    if (clock == "steady") {
        auto t0 = steady::now();
        if (which == "timed")
            got = app::slow_mutex.try_lock_for(d) && (app::slow_mutex.unlock(), true);
        else
            got = try_on<steady>(which, t0 + d);
        waited = ms_since(t0);
    } else {
        auto t0 = sys::now();
        got = try_on<sys>(which, t0 + d);
        waited = ms_since(t0);
    }
    std::printf("%s %ld%s\n", got ? "got" : "timeout", waited, !got && waited < ms ? " early" : "");
    return 0;
}

int run_wait(const std::string &clock, long ms, const char *flag)
{
    std::unique_lock<std::mutex> lk(app::queue_mutex);
    auto there = [&] { return access(flag, F_OK) == 0; };
    bool woken;
    long waited;
    if (clock == "steady") {
        auto t0 = steady::now();
        woken = app::queue_cv.wait_for(lk, std::chrono::milliseconds(ms), there);
        waited = ms_since(t0);
    } else {
        auto t0 = sys::now();
        woken = app::queue_cv.wait_until(lk, t0 + std::chrono::milliseconds(ms), there);
        waited = ms_since(t0);
    }
    std::printf("%s %ld%s\n", woken ? "woken" : "timeout", waited,
                !woken && waited < ms ? " early" : "");
    return 0;
}

int run_notify(const char *flag)
{
    {
        std::lock_guard<std::mutex> g(app::queue_mutex);
        int f = open(flag, O_WRONLY | O_CREAT, 0644);
        if (f < 0) {
            std::perror(flag);
            return 2;
        }
        close(f);
    }
    app::queue_cv.notify_all();
    return 0;
}

}  // namespace

int main(int argc, char **argv)
{
    std::string mode = argc > 1 ? argv[1] : "";
    if (mode == "count" && argc >= 6)
        return run_count(argv[2], argv[3], std::atol(argv[4]), std::atoi(argv[5]));
    if (mode == "record" && argc >= 6)
        return run_record(argv[2], std::atol(argv[3]), std::atoi(argv[4]), std::atoi(argv[5]));
    if (mode == "hold" && argc >= 4)
        return run_hold(argv[2], std::atol(argv[3]));
    if (mode == "tryfor" && argc >= 5)
        return run_tryfor(argv[2], argv[3], std::atol(argv[4]));
    if (mode == "wait" && argc >= 5)
        return run_wait(argv[2], std::atol(argv[3]), argv[4]);
    if (mode == "notify" && argc >= 3)
        return run_notify(argv[2]);
    if (mode == "hello") {
        std::printf("hello from main\n");
        return 0;
    }
    std::fprintf(stderr, "usage: cxxlegacy count|record|hold|tryfor|wait|notify|hello ...\n");
    return 2;
}
