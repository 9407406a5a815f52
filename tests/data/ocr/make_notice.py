"""Write notice-zh.jpg: a photo-like picture of a Chinese notice, for tests/test_ocr.py.

The test machine may have no Chinese font (CI installs only Python packages), so the picture is made once
and shipped: the notice's lines drawn in WenQuanYi Micro Hei (Debian's fonts-wqy-microhei), on off-white
paper, turned by 1.5 degrees, with noise and JPEG compression, as a phone photographs a notice. Re-run with
``.venv/bin/python tests/data/ocr/make_notice.py`` where that font is installed.
"""

from __future__ import annotations

import random
from pathlib import Path

from PIL import Image, ImageDraw, ImageFilter, ImageFont

FONT = "/usr/share/fonts/truetype/wqy/wqy-microhei.ttc"
LINES = [
    "青石镇图书馆通知",
    "自十二月起，本馆每周六的开放时间改为上午九点至下午五点。",
    "读者借阅的图书须在三十天内归还，逾期每天收取滞纳金五角。",
]


def main() -> None:
    """Draw the notice and save it beside this script."""
    title, body = ImageFont.truetype(FONT, 40), ImageFont.truetype(FONT, 30)
    page = Image.new("RGB", (1000, 330), (244, 240, 228))
    draw = ImageDraw.Draw(page)
    draw.text((340, 40), LINES[0], font=title, fill=(30, 30, 30))
    for i, line in enumerate(LINES[1:]):
        draw.text((60, 140 + i * 70), line, font=body, fill=(35, 35, 40))
    page = page.rotate(1.5, resample=Image.Resampling.BICUBIC, expand=False, fillcolor=(244, 240, 228))
    noise = random.Random(47)
    pixels = page.load()
    assert pixels is not None
    for _ in range(6000):
        x, y = noise.randrange(page.width), noise.randrange(page.height)
        shade = noise.randrange(150, 235)
        pixels[x, y] = (shade, shade, shade - 10)
    page = page.filter(ImageFilter.GaussianBlur(0.6))
    page.save(Path(__file__).with_name("notice-zh.jpg"), quality=80)


if __name__ == "__main__":
    main()
