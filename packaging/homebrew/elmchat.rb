# packaging/homebrew/elmchat.rb: a Homebrew formula for elmchat, building
# from the Git tree with the README's macOS commands (brew install the
# dependencies; autoreconf -fi && ./configure && make).
#
# Untested: no Mac (and no Homebrew) runs anything here.  What CI does check
# (tests/check-homebrew-formula.sh): the depends_on lines name exactly the
# libraries configure.ac requires (and looks up with `brew --prefix`) and the
# packages the README's `brew install` line gives, and `ruby -c` where Ruby
# is installed.
#
# Use: brew install --HEAD ./packaging/homebrew/elmchat.rb
class Elmchat < Formula
  desc "Terminal chat for Apple's OpenELM models, on its own inference engine"
  homepage "https://github.com/elmchat/elmchat"
  head "https://github.com/elmchat/elmchat.git", branch: "main"
  license "MIT"

  depends_on "autoconf" => :build
  depends_on "autoconf-archive" => :build
  depends_on "automake" => :build
  depends_on "pkg-config" => :build
  depends_on "blis"
  depends_on "curl"
  depends_on "json-c"
  depends_on "libyaml"
  depends_on "md4c"
  depends_on "ncurses"
  depends_on "nettle"
  depends_on "readline"

  def install
    system "autoreconf", "-fi"
    system "./configure", *std_configure_args
    system "make"
    system "make", "install"
  end

  test do
    assert_match "elmchat", shell_output("#{bin}/elmchat --version")
  end
end
