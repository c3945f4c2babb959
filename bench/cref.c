/*
 * C reference for the snapshot benchmark: one scan of /proc reading every /proc/<pid>/stat (and, in the
 * second scan, /proc/<pid>/cmdline too) with open/read/close, parsing pid, ppid, pgid, sid, state and start
 * time. Prints "stat <ms>" and "statcmd <ms>" for each of REPS rounds; the caller takes the last (warm) one.
 *   cref REPS
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static long sink;

static int scan(int with_cmdline) {
  char path[64], buf[4096];
  int count = 0;
  DIR *d = opendir("/proc");
  if (!d) return -1;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
    int fd = open(path, O_RDONLY);
    if (fd < 0) continue;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) continue;
    buf[n] = 0;
    char *p = strrchr(buf, ')');
    if (!p) continue;
    char state;
    int ppid, pgid, sid;
    unsigned long long start;
    /* state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime cutime cstime
       priority nice threads itrealvalue starttime */
    if (sscanf(p + 2, "%c %d %d %d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
               &state, &ppid, &pgid, &sid, &start) != 5) continue;
    sink += ppid + pgid + sid + (long)start + state;
    if (with_cmdline) {
      snprintf(path, sizeof path, "/proc/%s/cmdline", e->d_name);
      fd = open(path, O_RDONLY);
      if (fd >= 0) {
        n = read(fd, buf, sizeof buf);
        close(fd);
        if (n > 0) sink += buf[0];
      }
    }
    count++;
  }
  closedir(d);
  return count;
}

int main(int argc, char **argv) {
  int reps = argc > 1 ? atoi(argv[1]) : 3;
  for (int i = 0; i < reps; i++) {
    double t0 = now_ms();
    int n = scan(0);
    double t1 = now_ms();
    int m = scan(1);
    double t2 = now_ms();
    printf("stat %.3f %d\nstatcmd %.3f %d\n", t1 - t0, n, t2 - t1, m);
  }
  return sink == 42 ? 1 : 0;
}
