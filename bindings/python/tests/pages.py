"""A PEP 503 page as an installer holds it: PEP 691-shaped `files` dicts (filename, url,
hashes), from the HTML with the standard library's parser."""

from html.parser import HTMLParser
from urllib.parse import unquote


class _Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.files = []
        self._href = None

    def handle_starttag(self, tag, attrs):
        if tag == "a":
            self._href = dict(attrs).get("href")

    def handle_data(self, data):
        if self._href is not None and data.strip():
            url, _, fragment = self._href.partition("#")
            hashes = dict([fragment.split("=", 1)]) if "=" in fragment else {}
            self.files.append({"filename": data.strip(), "url": url, "hashes": hashes})
            self._href = None


def files_of(html: str):
    """The page's files as PEP 691 `files` entries."""
    parser = _Links()
    parser.feed(html)
    assert parser.files, "the page has no links"
    for entry in parser.files:
        assert unquote(entry["url"]).endswith(entry["filename"]), entry
    return parser.files
