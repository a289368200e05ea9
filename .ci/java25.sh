# Sourced: points JAVA_HOME at a JDK 25 (hearth's language level), or fails saying how to get one.
# The major version of the JDK at $1: from its release file (JAVA_VERSION="25.0.3"), read by bash
# itself, so that a launch does not start a JVM only to ask its version (about 50 ms, paid by every
# ./hearth start); from `java -version` where a JDK has no release file.
java_major() {
  local line version=""
  [ -x "$1/bin/java" ] || return 0
  if [ -r "$1/release" ]; then
    while IFS= read -r line; do
      case $line in JAVA_VERSION=*) version=${line#JAVA_VERSION=}; version=${version//\"/}; break ;; esac
    done < "$1/release"
  fi
  if [ -z "$version" ]; then
    version=$("$1/bin/java" -XX:+IgnoreUnrecognizedVMOptions -version 2>&1 | sed -n 's/.*version "\([0-9.]*\).*/\1/p' | head -1)
  fi
  version=${version#1.} # 1.8.0 is Java 8
  echo "${version%%[.+-]*}"
}
if [ -z "${JAVA_HOME:-}" ] || [ "$(java_major "$JAVA_HOME")" != "25" ]; then
  JAVA_HOME=""
  for candidate in /usr/lib/jvm/temurin-25-jdk-amd64 /usr/lib/jvm/temurin-25* /usr/lib/jvm/*25*; do
    if [ -x "$candidate/bin/java" ] && [ "$(java_major "$candidate")" = "25" ]; then JAVA_HOME=$candidate; break; fi
  done
  if [ -z "$JAVA_HOME" ]; then
    echo "hearth needs JDK 25: none found in JAVA_HOME or /usr/lib/jvm." >&2
    echo "  Debian/Ubuntu: add the Adoptium apt repository (https://adoptium.net/installation/linux/)," >&2
    echo "  then: sudo apt-get install temurin-25-jdk" >&2
    echo "  Any other JDK 25: unpack it and export JAVA_HOME=/path/to/jdk-25 (README, Requirements)." >&2
    exit 1
  fi
fi
export JAVA_HOME
