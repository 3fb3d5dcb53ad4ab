# Sourced by gpu-check.sh and cpu-host-check.sh. A build directory made on another machine and
# carried here names, in its CTest files, the directory it was configured in and the source tree
# it was configured for: both may not exist on this machine.
#
# carried_build_links DIR: makes each of those two paths a link (to DIR, and to the current
# directory, the repository root) where it does not exist, and prints one line per link made.
# Returns 1, with a line saying why, when DIR's own path names another directory that exists
# here (its tests would run that build instead).
carried_build_links() {
    local dir=$1 here made_in made_src
    here=$(cd "$dir" && pwd -P) || return 1
    made_in=$(sed -n 's/^CMAKE_CACHEFILE_DIR:INTERNAL=//p' "$dir/CMakeCache.txt" 2>/dev/null)
    made_src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$dir/CMakeCache.txt" 2>/dev/null)
    # The source tree first: the build directory often lies inside it.
    if [ -n "$made_src" ] && [ ! -e "$made_src" ]; then
        mkdir -p "$(dirname "$made_src")" && ln -s "$(pwd -P)" "$made_src" &&
            echo "$made_src -> $(pwd -P) (the source tree it was configured for)"
    fi
    if [ -n "$made_in" ] && [ "$made_in" != "$here" ]; then
        if [ -e "$made_in" ]; then
            if [ "$(cd "$made_in" && pwd -P)" != "$here" ]; then
                echo "$dir was built in $made_in, which is another directory here"
                return 1
            fi
        else
            mkdir -p "$(dirname "$made_in")" && ln -s "$here" "$made_in" &&
                echo "$made_in -> $dir (the paths in its CTest files)"
        fi
    fi
    return 0
}
